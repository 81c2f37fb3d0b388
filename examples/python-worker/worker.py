#!/usr/bin/env python3
"""A workq worker in Python, with only the standard library.

It runs `sendEmail` jobs through the queue server's plain HTTP API
(docs/http-api.md; the server describes it at GET /v1/openapi.json):

- claims one job at a time with a long poll (POST /v1/jobs/sendEmail/claim),
- runs its handler, extending the job's lease while the handler runs,
- completes the job with the handler's result, or fails the attempt with the
  exception the handler raised (the server retries it after its backoff, or
  ends it dead),
- or, when the handler raises RetryLater or RateLimited, puts the job back
  without counting the attempt: to run again later (POST /v1/job/{id}/snooze),
  or holding the whole job type on every worker (POST /v1/job/{id}/rate-limited),
- on SIGTERM or Ctrl-C, finishes the job in hand, claims no more and exits 0:
  a claim waiting for work answers at once (POST /v1/workers/{id}/stop-waiting),
  with the job the server may just have handed it, which runs first.

Settings come from the environment:
  WORKQ_URL       the server, e.g. http://127.0.0.1:4000
  WORKQ_TOKEN     a token with the scope consume:sendEmail (empty: an open server)
  WORKQ_WAIT_MS   how long one claim waits for work (default 10000)
  WORKQ_LEASE_MS  the lease each job is claimed with (default: the job's own)
  WORKQ_EXAMPLE_SEND_MS  how long the example handler takes to "send" (default 0)
"""

import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
import uuid

JOB_NAME = "sendEmail"
# The payload version this handler reads: the worker claims no other, so jobs
# of a newer version wait for a worker that reads them.
JOB_VERSION = 1


class WorkqError(Exception):
    """An error answered by the server: its HTTP status and its workq code."""

    def __init__(self, status, code, message):
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code


class Client:
    """The few calls a worker makes, as JSON over HTTP with a bearer token."""

    def __init__(self, url, token):
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method, path, body=None, timeout_s=30.0):
        headers = {"accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["content-type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            try:
                answer = json.load(error).get("error", {})
            except ValueError:
                answer = {}
            raise WorkqError(error.code, answer.get("code", "UNAVAILABLE"), answer.get("message", error.reason)) from None

    def claim(self, worker_id, wait_ms, lease_ms):
        body = {
            "workerId": worker_id,
            "minVersion": JOB_VERSION,
            "maxVersion": JOB_VERSION,
            "limit": 1,
            "waitMs": wait_ms,
            "host": socket.gethostname()[:255],
            "pid": os.getpid(),
        }
        if lease_ms is not None:
            body["leaseMs"] = lease_ms
        # The server may hold a claim up to wait_ms before answering.
        return self.call("POST", f"/v1/jobs/{JOB_NAME}/claim", body, timeout_s=wait_ms / 1000 + 30)["jobs"]

    def stop_waiting(self, worker_id):
        """Ends this worker's claims waiting on the server: each answers at once, with any job handed to it."""
        return self.call("POST", f"/v1/workers/{urllib.parse.quote(worker_id, safe='')}/stop-waiting")

    def complete(self, job, result):
        self.call("POST", f"/v1/job/{job['id']}/complete", {"leaseToken": job["leaseToken"], "result": result})

    def fail(self, job, error):
        body = {
            "leaseToken": job["leaseToken"],
            "message": str(error)[:10_000] or type(error).__name__,
            "errorName": type(error).__name__[:1_000],
            "stack": "".join(traceback.format_exception(error))[:64_000],
        }
        return self.call("POST", f"/v1/job/{job['id']}/fail", body)

    def snooze(self, job, delay_ms):
        return self.call("POST", f"/v1/job/{job['id']}/snooze", {"leaseToken": job["leaseToken"], "delayMs": delay_ms})

    def rate_limited(self, job, hold_ms):
        body = {"leaseToken": job["leaseToken"], "holdMs": hold_ms}
        return self.call("POST", f"/v1/job/{job['id']}/rate-limited", body)

    def extend(self, job, lease_ms, worker_id):
        body = {"leaseToken": job["leaseToken"], "leaseMs": lease_ms, "workerId": worker_id}
        return self.call("POST", f"/v1/job/{job['id']}/extend", body)


class DeliveryError(Exception):
    """The message cannot be delivered to its recipient."""


class RetryLater(Exception):
    """Not now: the job runs again `delay_ms` from now, its attempt not counted (as ctx.delay)."""

    def __init__(self, delay_ms):
        super().__init__(f"again in {delay_ms} ms")
        self.delay_ms = delay_ms


class RateLimited(Exception):
    """The upstream said 429: no job of the type starts for `hold_ms`, on any worker (as ctx.rateLimited)."""

    def __init__(self, hold_ms):
        super().__init__(f"the type is held {hold_ms} ms")
        self.hold_ms = hold_ms


# The recipients already tried, as a greylisting mail server or a busy one remembers them: the first try of
# each is turned away, the next one goes through.
TRIED = set()


def send_email(payload):
    """The example handler: "sends" the email and returns its message id (the `sendEmail` result)."""
    domain = payload["to"].rsplit("@", 1)[-1]
    if domain.endswith(".invalid"):
        raise DeliveryError(f"no mail server for {domain}: .invalid names no host (RFC 2606)")
    if domain in ("greylisting.test", "busy.test") and payload["to"] not in TRIED:
        TRIED.add(payload["to"])
        raise RetryLater(1000) if domain == "greylisting.test" else RateLimited(1000)
    time.sleep(int(os.environ.get("WORKQ_EXAMPLE_SEND_MS", "0")) / 1000)
    return {"messageId": f"<{uuid.uuid4()}@{domain}>"}


class LeaseKeeper(threading.Thread):
    """Extends a job's lease every third of its length while its handler runs; stops once the lease is lost."""

    def __init__(self, client, job, lease_ms, worker_id):
        super().__init__(daemon=True)
        self.client, self.job, self.lease_ms, self.worker_id = client, job, lease_ms, worker_id
        self.done = threading.Event()
        self.lost = False

    def run(self):
        while not self.done.wait(self.lease_ms / 3000):
            try:
                self.client.extend(self.job, self.lease_ms, self.worker_id)
            except WorkqError as error:
                if error.code == "LEASE_LOST":
                    self.lost = True
                    return
                log(f"job {self.job['id']}: could not extend its lease ({error}); trying again")
            except OSError as error:
                log(f"job {self.job['id']}: could not extend its lease ({error}); trying again")


def run_job(client, job, lease_ms, worker_id):
    """Runs one job's handler under a kept lease, then completes it or fails the attempt.

    The lease is `lease_ms` long when the claim asked for that length, else the job's own (`leaseMs`).
    """
    keeper = LeaseKeeper(client, job, lease_ms or job["leaseMs"], worker_id)
    keeper.start()
    try:
        result = send_email(job["payload"])
    except RetryLater as later:
        keeper.done.set()
        answer = client.snooze(job, later.delay_ms)
        log(f"job {job['id']}: {later}; runs again at {answer['runAt']}")
        return
    except RateLimited as limited:
        keeper.done.set()
        answer = client.rate_limited(job, limited.hold_ms)
        log(f"job {job['id']}: {limited}; no {JOB_NAME} job starts before {answer['heldUntil']}")
        return
    except Exception as error:  # noqa: BLE001 - any failure of the handler fails the attempt
        keeper.done.set()
        answer = client.fail(job, error)
        log(f"job {job['id']}: attempt {job['attempt']} failed ({error}); now {answer['state']}")
        return
    finally:
        keeper.done.set()
        keeper.join()
    if keeper.lost:
        log(f"job {job['id']}: its lease was lost while it ran; the result is dropped")
        return
    client.complete(job, result)
    log(f"job {job['id']}: completed")


def log(message):
    print(f"[python-worker {os.getpid()}] {message}", file=sys.stderr, flush=True)


def main():
    client = Client(os.environ.get("WORKQ_URL", "http://127.0.0.1:4000"), os.environ.get("WORKQ_TOKEN", ""))
    wait_ms = int(os.environ.get("WORKQ_WAIT_MS", "10000"))
    lease_ms = int(os.environ["WORKQ_LEASE_MS"]) if os.environ.get("WORKQ_LEASE_MS") else None
    worker_id = f"python-{socket.gethostname()}-{os.getpid()}"[:64]

    stopping = threading.Event()

    def end_waiting_claim():
        try:
            client.stop_waiting(worker_id)
        except (WorkqError, OSError) as error:
            log(f"the waiting claim could not be ended ({error}); it ends within {wait_ms} ms")

    def stop(signum, _frame):
        log(f"{signal.Signals(signum).name}: finishing the job in hand, then exiting")
        stopping.set()
        # From another thread: this one may be inside the claim's long poll, which then answers at once.
        threading.Thread(target=end_waiting_claim, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log(f"claiming {JOB_NAME} v{JOB_VERSION} jobs from {client.url}")
    while not stopping.is_set():
        try:
            for job in client.claim(worker_id, wait_ms, lease_ms):
                run_job(client, job, lease_ms, worker_id)
        except WorkqError as error:
            if error.status in (401, 403):
                log(f"the server refused this worker: {error}")
                return 1
            log(f"{error}; trying again shortly")
            stopping.wait(1)
        except OSError as error:
            log(f"the server could not be reached ({error}); trying again shortly")
            stopping.wait(1)
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
