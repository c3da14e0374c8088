"""PySpark's Python worker daemon (spark.python.daemon.module), with one change: a worker forked for a task
that Spark cancels before the worker has read its first bytes ends quietly. Spark cancels the tasks still
waiting when a job fails, and PySpark's own daemon prints a traceback of the closed socket on the console,
under the belt's one line that says why the run stopped."""

from pyspark import daemon

_worker = daemon.worker


def worker(sock, authenticated: bool) -> int:
    try:
        return _worker(sock, authenticated)
    except (ConnectionError, EOFError):  # the JVM closed the socket: its task was cancelled
        return 1


if __name__ == "__main__":
    daemon.worker = worker
    daemon.manager()
