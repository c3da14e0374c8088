"""`metrics.port`: the run's progress and counts (pipeline/progress.py) in Prometheus's text format, served by
the official client library (prometheus_client) at http://HOST:PORT/metrics on every interface while the run
goes on. Each scrape reads one snapshot of the tracker, the same values OUT/_work/progress.json holds."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

PREFIX = "crawlbelt"


def port_in_use(port: int) -> str | None:
    """Why `port` cannot be served on this machine (what the OS says), or None when it is free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))  # as the server binds it; no SO_REUSEADDR, so a listener is seen
        except OSError as error:
            return error.strerror or errno.errorcode.get(error.errno or 0, str(error))
    return None


class RunCollector(Collector):
    """A snapshot of the tracker as metric families, read at each scrape."""

    def __init__(self, tracker):
        self.tracker = tracker

    def collect(self) -> Iterator[Metric]:
        yield from families(self.tracker.snapshot())


def families(snapshot: dict) -> Iterator[Metric]:
    counts = snapshot["counts"]
    yield _counter("records_read", "Records the filter pass read (finished input files)", counts["records_read"])
    yield _counter("bytes_read", "Input bytes of the files the filter pass finished", counts["bytes_read"])
    documents_in = CounterMetricFamily(f"{PREFIX}_stage_documents_in", "Documents a stage judged", labels=["stage"])
    rejected = CounterMetricFamily(f"{PREFIX}_stage_documents_rejected", "Documents a stage rejected", labels=["stage"])
    for stage, row in counts["stages"].items():
        documents_in.add_metric([stage], row["rows_in"])
        rejected.add_metric([stage], row["rejected"])
    yield documents_in
    yield rejected
    by_reason = CounterMetricFamily(f"{PREFIX}_documents_rejected", "Documents rejected, by reason", labels=["reason"])
    for reason, n in counts["rejected_by_reason"].items():
        by_reason.add_metric([reason], n)
    yield by_reason
    not_documents = CounterMetricFamily(f"{PREFIX}_not_documents", "Records that are no document", labels=["reason"])
    for reason, n in counts["not_documents"].items():
        not_documents.add_metric([reason], n)
    yield not_documents
    yield _gauge("documents_kept", "Documents kept so far (final once finalize has run)", counts["kept"])
    cpu = CounterMetricFamily(
        f"{PREFIX}_stage_cpu_seconds", "Seconds of stage work, summed over workers", labels=["stage"]
    )
    for stage, seconds in snapshot["cpu_seconds"].items():
        cpu.add_metric([stage], seconds)
    yield cpu
    errors = CounterMetricFamily(f"{PREFIX}_errors", "Warnings and errors the run logged", labels=["level"])
    for level, n in snapshot["errors"].items():
        errors.add_metric([level], n)
    yield errors
    yield _gauge("run_complete", "1 once the run has completed", snapshot["state"] == "complete")
    yield from pass_families(snapshot["pass"])


def pass_families(now: dict | None) -> Iterator[Metric]:
    """The pass under way (none between passes and after the run) and its progress."""
    current = GaugeMetricFamily(f"{PREFIX}_pass", "1 for the pass under way", labels=["pass"])
    if now is not None:
        current.add_metric([now["name"]], 1)
    yield current
    figures = {
        "step": "The engine call of the pass under way, from 1",
        "fraction": "Share of the pass (its current step) done",
        "documents_done": "Documents (or sequences) of the pass done",
        "documents_total": "Documents of the pass (estimated from bytes during the filter pass)",
        "bytes_done": "Bytes of the pass's input done",
        "bytes_total": "Bytes of the pass's input",
        "documents_per_s": "Documents per second of the current step",
        "seconds_left": "Seconds left of the pass (its current step), at the current rate",
    }
    for key, text in figures.items():
        family = GaugeMetricFamily(f"{PREFIX}_pass_{key}", text, labels=["pass"])
        if now is not None and now[key] is not None:
            family.add_metric([now["name"]], now[key])
        yield family


def _counter(name: str, text: str, value: float) -> Metric:
    return CounterMetricFamily(f"{PREFIX}_{name}", text, value=value)


def _gauge(name: str, text: str, value: float) -> Metric:
    return GaugeMetricFamily(f"{PREFIX}_{name}", text, value=float(value))


class Server:
    def __init__(self, server, thread, port: int):
        self.server, self.thread, self.port = server, thread, port

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def serve(port: int, tracker) -> Server:
    """The tracker's metrics at http://0.0.0.0:PORT/metrics, from a thread of this process."""
    registry = CollectorRegistry(auto_describe=True)
    registry.register(RunCollector(tracker))
    try:
        server, thread = start_http_server(port, addr="0.0.0.0", registry=registry)
    except OSError as error:  # taken between validation and now
        raise MetricsPortError(f"metrics.port {port}: in use on this machine ({error.strerror or error})") from None
    return Server(server, thread, port)


class MetricsPortError(RuntimeError):
    """metrics.port could not be served: one line, exit 2."""
