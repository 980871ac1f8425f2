"""Health, readiness and metrics: ``/healthz`` and ``/readyz`` open (probes carry no token),
``/metrics`` behind the token."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response

from efficientrag.serve.dependencies import ConfigDep, MetricsDep, ServiceDep, require_token

router = APIRouter()


@router.get("/healthz", summary="the process is alive")
async def healthz() -> dict[str, str]:
    return {"status": "alive"}


@router.get("/readyz", summary="models loaded and the search backend answers")
async def readyz(service: ServiceDep, cfg: ConfigDep) -> JSONResponse:
    state = await service.ready(cfg.probe_timeout_s)
    return JSONResponse(state, status_code=200 if state["ready"] else 503)


@router.get("/metrics", summary="Prometheus metrics", dependencies=[Depends(require_token)])
async def prometheus(metrics: MetricsDep) -> Response:
    payload, content_type = metrics.render()
    return Response(payload, media_type=content_type)
