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
    counts, stages = snapshot["counts"], snapshot["counts"]["stages"]
    yield _counter("records_read", "Records the filter pass read (finished input files)", counts["records_read"])
    yield _counter("bytes_read", "Input bytes of the files the filter pass finished", counts["bytes_read"])
    yield _by(
        "stage_documents_in", "Documents a stage judged", "stage", {s: row["rows_in"] for s, row in stages.items()}
    )
    rejected = {s: row["rejected"] for s, row in stages.items()}
    yield _by("stage_documents_rejected", "Documents a stage rejected", "stage", rejected)
    yield _by("documents_rejected", "Documents rejected, by reason", "reason", counts["rejected_by_reason"])
    yield _by("not_documents", "Records that are no document", "reason", counts["not_documents"])
    yield _gauge("documents_kept", "Documents kept so far (final once finalize has run)", counts["kept"])
    yield _by("stage_cpu_seconds", "Seconds of stage work, summed over workers", "stage", snapshot["cpu_seconds"])
    yield _by("errors", "Warnings and errors the run logged", "level", snapshot["errors"])
    yield _gauge("run_complete", "1 once the run has completed", snapshot["state"] == "complete")
    yield from pass_families(snapshot["pass"])


def _by(name: str, text: str, label: str, values: dict[str, float]) -> Metric:
    """A counter with one sample per value of `label`."""
    family = CounterMetricFamily(f"{PREFIX}_{name}", text, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


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
