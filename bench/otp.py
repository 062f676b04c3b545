"""OTP send and verify through the production server, next to the baselines (bench/harness.py).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/platform REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/otp.py
    .venv/bin/python bench/otp.py --once --duration 5             # quicker; SQLite without DATABASE_URL
    .venv/bin/python bench/otp.py --db-connections persistent     # CONN_MAX_AGE instead of psycopg's pool
    .venv/bin/python bench/otp.py --live                          # a live key: each send holds its price

gunicorn with uvicorn workers and the Procfile's Celery workers (delivery always runs on the `codes` worker, as in
production),
a sandbox key. Send: every request a new recipient and a new idempotency-key. Verify: every request a
different code record with its right code (records made beforehand, each verified once), once the worker has
delivered every send, so the two do not share the machine. Send and verify are each measured in pairs with the
1 read + 1 insert baseline (a run of each in turn, bench/harness.py `paired`); prints req/s, p50/p95 and the
median of the pairs' ratios, then the resident memory of each web worker.
Figures and the choices behind them: docs/performance.md.
"""
import argparse
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import Bench, bench_arguments, lua_string  # noqa: E402

CONNECTION_MODES = {
    "pool": {"DATABASE_POOL": "true"},
    "persistent": {"DATABASE_POOL": "false", "DATABASE_CONN_MAX_AGE": "60"},
    "per-request": {"DATABASE_POOL": "false", "DATABASE_CONN_MAX_AGE": "0"},
}

# Each wrk thread numbers its requests; recipients cycle through 10,000 numbers, idempotency keys are random.
SEND_LUA = """
local threads, counter = 0, 0  -- `tid` is a global each thread gets from setup()
setup = function(thread) thread:set("tid", threads); threads = threads + 1 end
init = function(args) math.randomseed(os.time() * 100 + tid) end
request = function()
  counter = counter + 1
  local n = (counter * 2 + tid) %% 10000
  local key = string.format("%%08x-%%04x-4%%03x-a%%03x-%%06x%%06x", math.random(0, 2147483647),
    math.random(0, 65535), math.random(0, 4095), math.random(0, 4095), math.random(0, 16777215),
    math.random(0, 16777215))
  return wrk.format("POST", "/api/v1/otp/send", {["Content-Type"] = "application/json",
    ["Authorization"] = %(auth)s, ["Idempotency-Key"] = key},
    string.format(%(recipient)s, n))
end
"""

# The records to verify are lines "id code" of a file; thread k of 2 takes lines k, k+2, k+4... Each wrk
# process (the warm-up, then each run) starts where the clock says the previous ones can have got to at
# `rate` req/s, so no record is verified twice (a 409 would show as non-2xx).
VERIFY_LUA = """
local threads, mine, i = 0, {}, 0  -- `tid` is a global each thread gets from setup()
setup = function(thread) thread:set("tid", threads); threads = threads + 1 end
init = function(args)
  local n = 0
  for line in io.lines(%(path)s) do
    if n %% 2 == tid then mine[#mine + 1] = line end
    n = n + 1
  end
  i = (os.time() - %(t0)d) * %(rate)d / 2
end
request = function()
  i = i %% #mine + 1
  local id, code = mine[i]:match("(%%S+) (%%S+)")
  return wrk.format("POST", "/api/v1/otp/verify", {["Content-Type"] = "application/json",
    ["Authorization"] = %(auth)s}, string.format('{"id": "%%s", "code": "%%s"}', id, code))
end
"""


def records_to_verify(*, api_key, count: int, path: Path) -> None:
    """`count` sent records with known codes (as a delivery would have left them), written to `path`."""
    from django.utils import timezone

    from otp_app.models import OtpRecord
    from otp_app.services.codes import code_hash, code_new

    now = timezone.now()
    lines = []
    for start in range(0, count, 2000):
        batch = []
        for _ in range(min(2000, count - start)):
            record = OtpRecord(api_key=api_key, workspace=api_key.workspace, mode="test", recipient="+14155550100",
                               channel="sms", route=["sms"], attempts_left=5, expires_at=now + timedelta(hours=2))
            code = code_new()
            record.code_hash = code_hash(record.pk, code)
            batch.append(record)
            lines.append(f"{record.pk} {code}")
        OtpRecord.objects.bulk_create(batch)
    path.write_text("\n".join(lines) + "\n")


def deliveries_drained(timeout: float = 180) -> str:
    """Wait for the worker to finish the sends' deliveries, so they do not share the machine with the next run."""
    from otp_app.models import Delivery

    start = time.monotonic()
    while Delivery.objects.filter(status=Delivery.Status.QUEUED).exists():
        if time.monotonic() - start > timeout:
            return f"still queued after {timeout:.0f} s: {Delivery.objects.filter(status='queued').count()}"
        time.sleep(0.5)
    elapsed = time.monotonic() - start
    return f"{Delivery.objects.count()} deliveries done by the codes worker ({elapsed:.0f} s after the load)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_arguments(parser)
    parser.add_argument("--db-connections", choices=sorted(CONNECTION_MODES), default="pool",
                        help="how the server holds PostgreSQL connections (default: pool, the production setting)")
    parser.add_argument("--live", action="store_true",
                        help="send with a live key: each send holds its price on the balance (by email, to a mail "
                             "backend that discards), as a paying customer's does")
    parser.add_argument("--verify-rate", type=int, default=2000,
                        help="the most verify req/s the records made beforehand suffice for (default 2000)")
    args = parser.parse_args()
    env = {"CELERY_TASK_ALWAYS_EAGER": "false", "OTP_SENDS_PER_RECIPIENT": "100000000",
           "OTP_SENDS_PER_KEY_PER_MINUTE": "100000000", **CONNECTION_MODES[args.db_connections]}
    if args.live:
        env.update(OTP_EMAIL_ENABLED="true", DJANGO_EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend")
    with Bench("otp", args, celery=True, env=env) as bench:
        from otp_app.services.keys import otp_key_create
        from platform_app.models import Workspace

        from otp_app.services.balance import balance_top_up

        workspace = Workspace.objects.create(name="Bench", slug="bench")
        key, raw = otp_key_create(workspace=workspace, mode="test", name="bench")
        auth = lua_string(f"Bearer {raw}")
        send_key, recipient = auth, lua_string('{"recipient": "+1415555%04d"}')
        if args.live:  # the hold is one conditional UPDATE of the workspace's balance row per send
            balance_top_up(workspace=workspace, amount=10 ** 12)
            _, live_raw = otp_key_create(workspace=workspace, mode="live", name="bench-live")
            send_key, recipient = lua_string(f"Bearer {live_raw}"), lua_string('{"recipient": "b%04d@example.com"}')
        codes = bench.data_dir / "verify.txt"
        seconds = 2 * (2 + args.runs * (args.duration + 2))  # warm-ups and runs, verify's and its baseline's
        records_to_verify(api_key=key, count=args.verify_rate * seconds, path=codes)
        bench.serve()
        print(f"connections: {args.db_connections}; {'live' if args.live else 'sandbox'} key for sends; "
              f"delivery on the Procfile's codes worker; "
              f"broker {'Redis' if os.environ.get('REDIS_URL') else 'filesystem'}")
        bench.baselines()
        # every run starts with the worker idle: deliveries left from a send run would slow the baseline after it
        bench.paired("POST /api/v1/otp/send", script=SEND_LUA % {"auth": send_key, "recipient": recipient},
                     settle=deliveries_drained)
        print(deliveries_drained(), flush=True)
        verify = VERIFY_LUA % {"auth": auth, "path": lua_string(str(codes)), "t0": int(time.time()),
                               "rate": args.verify_rate}
        bench.paired("POST /api/v1/otp/verify", script=verify)
        print("web workers after the load: " + ", ".join(bench.worker_memory()))


if __name__ == "__main__":
    main()
