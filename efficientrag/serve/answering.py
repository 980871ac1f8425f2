"""From checked questions to results, for every entrance (``/v1/retrieve``, ``/retrieve``, the MCP
tool): the request's loop settings, admission, the batcher, the client's disconnect, and the one
refusal each failure becomes.

Content comes before admission: the routes check every question, and here the settings are checked
before the batcher is asked to admit, so a request's own fault gets the 4xx naming its field
whatever the load (a 503 would tell its client to send the same bad request again). Admission is
the batcher's (``MicroBatcher.admit``), once, on the state it queues under.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from efficientrag.pipeline.efficientrag import RetrievalResult
from efficientrag.serve import errors
from efficientrag.serve.admission import Refused, Shed, batch_target
from efficientrag.serve.backend import BackendFailure
from efficientrag.serve.batcher import BULK, OPEN, TIMED, Caller, CallerGone, DeadlineExceeded, MicroBatcher
from efficientrag.serve.config import ServeConfig
from efficientrag.serve.disconnect import Receive, watch_disconnect
from efficientrag.serve.errors import RequestError
from efficientrag.serve.requests import exit_head_problem, settings_config
from efficientrag.serve.service import Service

log = logging.getLogger(__name__)


class Answerer:
    """``await answerer(questions, settings, deadline_s, receive)``: the results in order, or a
    ``RequestError`` (503 refused, 504 late, 499 the client left, 502/503 backend, 500)."""

    def __init__(self, service: Service, batcher: MicroBatcher, cfg: ServeConfig) -> None:
        self.service = service
        self.batcher = batcher
        self.cfg = cfg

    def _refusal(self, exc: Refused, questions: int, deadline_s: float) -> RequestError:
        """The 503, its ``Retry-After`` a place in a group of returning callers
        (``admission.RetrySlots``), each group a batch's worth (``admission.batch_target``)."""
        if exc.wait_s is not None:
            cost, now = self.batcher.cost, time.monotonic()
            group = batch_target(cost, deadline_s, self.batcher.max_batch)
            admitted = self.batcher.admitted_s(now, without_bulk=isinstance(exc, Shed))
            exc.retry_after_s = self.batcher.slots.after(exc.wait_s, questions, cost, now, group, admitted)
            if isinstance(exc, Shed):
                self.batcher.delay.refused(now, exc.retry_after_s)
        return errors.from_refusal(exc)

    def kind(self, questions: int, deadline_s: float) -> str:
        """``TIMED`` with a deadline; without one, ``BULK`` from ``serve.bulk_queries`` questions
        (a rollout's batch) and ``OPEN`` below (a caller whose own timeout the server is not told)."""
        if not math.isinf(deadline_s):
            return TIMED
        return BULK if questions >= self.cfg.bulk_queries else OPEN

    async def __call__(
        self,
        questions: list[str],
        settings: dict[str, Any],
        deadline_s: float,
        receive: Receive | None,
        *,
        field: str,
    ) -> list[RetrievalResult]:
        """The results of ``questions``, already checked by the route.

        Args:
            questions: The questions (at least one).
            settings: The request's loop settings (unset ones None), checked here, before admission.
            deadline_s: Seconds the request may take (``math.inf``: none).
            receive: The connection's ASGI receive, to notice a client that leaves (None: no
                connection to watch).
            field: The request field that holds the questions, named by a refusal of their count.
        """
        if len(questions) > self.cfg.max_queue:
            raise RequestError(
                422, field, f"{len(questions)} questions; this server queues at most {self.cfg.max_queue}"
            )
        key, config = settings_config(self.service.base.config, settings, self.cfg)
        if config.exit_threshold is not None:
            problem = exit_head_problem(self.service.base.labeler)
            if problem is not None:
                raise RequestError(422, "settings.exit_threshold", problem)
        caller = Caller(deadline=time.monotonic() + deadline_s, kind=self.kind(len(questions), deadline_s))
        try:
            if receive is None:
                return await self.batcher.submit(key, questions, caller)
            async with watch_disconnect(receive, lambda: self.batcher.leave(caller)):
                return await self.batcher.submit(key, questions, caller)
        except Refused as exc:
            raise self._refusal(exc, len(questions), deadline_s) from None
        except DeadlineExceeded as exc:
            raise RequestError(504, "deadline_ms", str(exc), kind=errors.DEADLINE) from None
        except CallerGone:
            raise RequestError(
                499, "client", "the client closed the connection before its answer", kind=errors.CLIENT_GONE
            ) from None
        except BackendFailure as exc:
            log.warning("%s", exc)
            raise errors.from_backend(exc) from None
        except Exception:
            log.exception("retrieve_batch failed")
            raise RequestError(
                500, "server", "retrieval failed; see the server log", kind=errors.INTERNAL
            ) from None
