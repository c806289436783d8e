"""A million keys: the agent path and the manager's lists on a large store beside a fresh one.

    python bench/scale.py                                   # small: 20,000 keys on 4,000 tapes
    python bench/scale.py --keys 1000000 --tapes 200000 --store /work/scratch/scale-store
    python bench/scale.py ... --media-pools 50      # the large store's drives judged by 50 media pools

The large store is filled through the KMA's own KMIP service, as drives fill it: each tape gets
its first key by Write Key, and the remaining keys come by Create + Activate (one request, the
ID placeholder) bound to those tapes, from 16 enrolled agents. No row is written by hand. The
store is kept in `--store` and reused when it already holds the asked-for size (filling a
million keys takes many minutes).

Then, against the large store and a fresh demo store (both served at once, measured in
alternating rounds so that a busy machine weighs on both alike):
- the agent path at 16 agents: Write Key for an existing tape and for a new one, Get of an
  active key, Locate by data unit (Name = volser);
- the API's first page (limit 100, over HTTPS as the manager asks) of every list, for every
  sort it offers (both orders) and every filter it offers (each value of a closed filter), and
  for each search people type (an exact volser, a prefix, a fragment, a miss; also the audit log's).
Prints a table, then, last, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import queue
import random
import statistics
import string
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.keys import (  # noqa: E402
    BACKUP_TIMEOUT,
    Conn,
    KeptBackedUp,
    enroll_agents,
    exit_on_signals,
    fill_pool,
    ok,
    pool_backer,
    start_kma,
    uid_of,
)
from bench.rounds import Spread, finish, interleave, ratio_of, summarise, too_wide  # noqa: E402
from kma.kmip import ttlv  # noqa: E402
from kma.kmip.client import key_template, name_attribute, parse_response, request_message  # noqa: E402
from kma.kmip.enums import ObjectType, Operation, Tag  # noqa: E402
from kma.quorum import pending_ops  # noqa: E402
from kma.services import agents, data_units, keys, users  # noqa: E402
from kma.services.paging import ListQuery  # noqa: E402
from tests.support.kma_process import RunningKma  # noqa: E402

AGENTS = 16
VERSION = (1, 4)  # Create + Activate in one message (the ID placeholder)
SAMPLE = 2000  # keys and tapes remembered for Get, Write Key and Locate
# Keys for every Write Key of a new tape in the measured rounds. A one-KMA cluster issues only keys a
# database backup holds (issue 12), so the pool is filled to this and backed up once before any
# round, as bench/keys.py does: a backup during a round (minutes on a million keys) would be what
# the round measures, and a pool of 1,000 ran dry within the first rounds.
POOL = 20_000
ALPHABET = string.digits + string.ascii_uppercase
Files = tuple[str, str, str]


def volser(n: int, prefix: str = "S") -> str:
    """Tape n as a six-character volser: a prefix and five base-36 digits (60 million tapes)."""
    digits = ""
    for _ in range(5):
        n, d = divmod(n, 36)
        digits = ALPHABET[d] + digits
    return prefix + digits


# --- requests -----------------------------------------------------------------------------
def write_key_request(unit: str) -> bytes:
    return request_message([(Operation.WRITE_KEY, ttlv.text(Tag.DATA_UNIT, unit))], VERSION)


def create_activate_request(unit: str) -> bytes:
    create = ttlv.enum(Tag.OBJECT_TYPE, ObjectType.SYMMETRIC_KEY) + key_template(unit)
    return request_message([(Operation.CREATE, create), (Operation.ACTIVATE, b"")], VERSION)


def get_request(uid: str) -> bytes:
    return request_message([(Operation.GET, ttlv.text(Tag.UNIQUE_IDENTIFIER, uid))], VERSION)


def locate_request(unit: str) -> bytes:
    return request_message([(Operation.LOCATE, name_attribute(unit))], VERSION)


# --- filling a store through KMIP ---------------------------------------------------------
# The build issues many times any pool, and in a one-KMA cluster only keys a database backup holds
# are issued (issue 12). A backup of a store near a million keys (over a GB, paced to half a core)
# takes minutes on a busy machine, so the pool is made as large as the KMA allows while the store
# fills (the issue rate it covers is this over one backup's length), and an agent refused for an
# empty pool waits as a drive would and asks again: a refusal for any other reason fails the build.
BUILD_POOL = 100_000
EMPTY_POOL = b"no Ready key"  # in the refusal's Result Message (kma/services/keypool.py)
EMPTY_POOL_PAUSE = 1.0


def why_failed(response: bytes) -> str:
    """The first refused item's Result Message, for the build's error."""
    try:
        return next((r.message or "no message") for r in parse_response(response) if r.status != 0)
    except Exception as exc:  # noqa: BLE001 - an answer that is not even KMIP says so
        return f"an answer that could not be read ({exc!r})"


def issue(conn: Conn, request: bytes, tally: dict[str, Any]) -> bytes | None:
    """Send one issuing request until it is answered other than 'no Ready key'; the response when
    it succeeded, else None (counted, with the first failure's reason)."""
    while not ok(response := conn.exchange(request)):
        if EMPTY_POOL not in response:
            tally["errors"] += 1
            tally["why"] = tally["why"] or why_failed(response)
            return None
        tally["waits"] += 1
        time.sleep(EMPTY_POOL_PAUSE)
    tally["done"] += 1
    return response


def _fill_agent(address: str, files: Files, agent: int, tapes: int, keys_total: int, out: Any) -> None:
    """One agent (a thread): its share of the tapes by Write Key, then its share of the other
    keys by Create + Activate on those tapes. Reports its tally (done, errors and why, waits for
    an empty pool, sampled uids)."""
    tally: dict[str, Any] = {"done": 0, "errors": 0, "waits": 0, "why": None, "uids": []}
    try:
        conn = Conn(address, files)
        for n in range(agent, tapes, AGENTS):
            issue(conn, write_key_request(volser(n)), tally)
        for i in range(agent, keys_total - tapes, AGENTS):
            response = issue(conn, create_activate_request(volser(i % tapes)), tally)
            if response is not None and len(tally["uids"]) < SAMPLE // AGENTS:
                tally["uids"].append(uid_of(response))
    except Exception as exc:  # reported, never a thread that dies silently and a fill that waits
        print(f"agent {agent}: {exc!r}", file=sys.stderr, flush=True)
        tally["errors"] += 1
        tally["why"] = tally["why"] or repr(exc)
    out.put(tally)


def _fill_process(
    address: str, files: list[Files], agents: list[int], tapes: int, keys_total: int, out: Any
) -> None:
    threads = [
        threading.Thread(target=_fill_agent, args=(address, f, a, tapes, keys_total, out))
        for f, a in zip(files, agents, strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def fill(
    kma: RunningKma, address: str, files: list[Files], tapes: int, keys_total: int, backups: KeptBackedUp
) -> list[str]:
    ctx = mp.get_context("spawn")
    out: Any = ctx.Queue()
    procs = [
        ctx.Process(
            target=_fill_process,
            args=(address, files[p::2], list(range(AGENTS))[p::2], tapes, keys_total, out),
        )
        for p in range(2)
    ]
    began = time.time()
    for proc in procs:
        proc.start()
    results: list[dict[str, Any]] = []
    try:
        while len(results) < AGENTS:
            try:
                results.append(out.get(timeout=30))
            except queue.Empty:  # report progress while the agents work
                backups.check()  # the pool would run dry: stop now, saying why
                print(
                    f"  {time.time() - began:6.0f} s: {progress(kma)} Last backup: {backups.last_made}.",
                    flush=True,
                )
    except BaseException:
        for proc in procs:
            proc.terminate()
        raise
    for proc in procs:
        proc.join()
    done, errors, waits = (sum(r[k] for r in results) for k in ("done", "errors", "waits"))
    wall = time.time() - began
    print(
        f"filled {done:,} requests in {wall:.0f} s ({done / wall:.0f}/s), {errors} errors, "
        f"{waits:,} waits of {EMPTY_POOL_PAUSE:.0f} s for an empty pool",
        flush=True,
    )
    if errors:
        why = next(r["why"] for r in results if r["why"])
        raise RuntimeError(f"{errors} requests failed while filling the store; the first: {why}")
    return [u for r in results for u in r["uids"]]


def progress(kma: RunningKma) -> str:
    """The store's size and the pool as the dashboard tells a Backup Operator (its warning too)."""
    dashboard = kma.client("backup").get_dashboard()
    pool = dashboard.backups
    if pool is None:
        return "no backup readiness on the dashboard"
    warning = next((w for w in dashboard.warnings if "run out" in w), "")
    waiting = f"{pool.keys_waiting_for_backup:,} wait for a backup"
    return f"{pool.keys_issued_recently:,} keys issued; {pool.ready_keys:,} Ready, {waiting}. {warning}"


def open_store(
    root: Path, keys_total: int, tapes: int, issuing: bool = True
) -> tuple[RunningKma, str, list[Files], list[str], Callable[[], None]]:
    """The store in `root` when it holds `keys_total` keys on `tapes` tapes; else build it there.
    `issuing`: the bench issues keys, so the pool is backed up before the rounds, and the returned
    call backs up what it refilled since (bench/keys.py `pool_backer`)."""
    back_up: Callable[[], None] = lambda: None  # noqa: E731 - a store that issues nothing
    meta_file = root / "scale.json"
    if meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if meta["keys"] == keys_total and meta["tapes"] == tapes:
            kma = RunningKma(root / "kma-demo" / "kma", meta["demo"])
            kma.start()
            address = next(k for k in kma.client("so").list_kmas().items).service_address
            if meta.get("demo", {}).get("key_split") and issuing:
                back_up = back_up_pool(kma)
            print(f"reusing the store in {root}", flush=True)
            return kma, address, [tuple(f) for f in meta["agents"]], meta["uids"], back_up
        raise SystemExit(f"{root} holds another size ({meta['keys']} keys); name another --store")
    root.mkdir(parents=True, exist_ok=True)
    kma, address = start_kma(root)
    fill_pool(kma, BUILD_POOL)
    backups = KeptBackedUp(kma)  # the fill issues many times the pool
    try:
        try:
            files = enroll_agents(kma, address, root, AGENTS)
            uids = fill(kma, address, files, tapes, keys_total, backups)
        finally:
            backups.stop()
    except BaseException:  # a failure or a signal: the KMA this started stops too
        kma.stop()
        raise
    meta = {"keys": keys_total, "tapes": tapes, "demo": kma.demo, "agents": files, "uids": uids}
    meta_file.write_text(json.dumps(meta))
    if issuing:
        back_up = back_up_pool(kma)
    return kma, address, files, uids, back_up


def back_up_pool(kma: RunningKma) -> Callable[[], None]:
    """A pool of POOL keys, backed up (so Ready), before any measured round issues from it; the
    call that backs up what the pool refilled since, before each later round (a round of new
    tapes issues more than a pool: without it the fresh store's pool ran dry in the third)."""
    fill_pool(kma, POOL)
    # A backup now (the pool's keys wait for one), outside any round.
    return pool_backer(kma.client("backup", timeout=BACKUP_TIMEOUT))


# --- the agent path ----------------------------------------------------------------------
AGENT_OPS = ("write_key_existing", "write_key_new", "get", "locate")


def _agent_worker(
    address: str,
    files: list[Files],
    op: str,
    uids: list[str],
    tapes: int,
    start: float,
    end: float,
    seed: str,
    out: Any,
) -> None:
    """One process: a thread per agent, one request at a time; reports the latencies."""
    conns = [Conn(address, f) for f in files]
    results: list[tuple[int, list[float]]] = []

    def run(i: int, conn: Conn) -> None:
        rng = random.Random(f"{seed}-{i}")

        def request() -> bytes:
            if op == "write_key_existing":
                return write_key_request(volser(rng.randrange(tapes)))
            if op == "write_key_new":  # a tape this store has not seen (60 million names)
                return write_key_request(volser(rng.randrange(36**5), prefix="N"))
            if op == "get":
                return get_request(rng.choice(uids))
            return locate_request(volser(rng.randrange(tapes)))

        errors, lat = 0, []
        while time.time() < start:
            time.sleep(0.001)
        while time.time() < end:
            data = request()
            began = time.perf_counter()
            try:
                good = ok(conn.exchange(data))
            except (OSError, ValueError):
                good = False
            lat.append(time.perf_counter() - began)
            errors += not good
        results.append((errors, lat))

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(results)


def agent_round(store: Store, op: str, duration: float, seed: str) -> dict[str, float]:
    store.back_up()  # outside the timing: the keys the last round's new tapes took, refilled
    ctx = mp.get_context("spawn")
    out: Any = ctx.Queue()
    start = time.time() + 5.0  # TLS handshakes (16, on a busy machine) before the window
    procs = [
        ctx.Process(
            target=_agent_worker,
            args=(
                store.address,
                store.files[p::2],
                op,
                store.uids,
                store.tapes,
                start,
                start + duration,
                f"{seed}{p}",
                out,
            ),
        )
        for p in range(2)
    ]
    for proc in procs:
        proc.start()
    gathered = [out.get(timeout=duration + 120) for _ in procs]
    for proc in procs:
        proc.join()
    lat = sorted(x for part in gathered for _, ls in part for x in ls)
    errors = sum(e for part in gathered for e, _ in part)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(len(lat) * q))] * 1000 if lat else float("nan")

    return {
        "ops_per_s": len(lat) / duration,
        "p50_ms": pct(0.5),
        "p99_ms": pct(0.99),
        "errors": float(errors),
    }


# --- the manager's lists -----------------------------------------------------------------
LISTS: dict[str, tuple[str, ListQuery]] = {
    "keys": ("list_keys", keys.LIST),
    "data_units": ("list_data_units", data_units.LIST),
    "agents": ("list_agents", agents.LIST),
    "users": ("list_users", users.LIST),
    "quorum_operations": ("list_quorum_operations", pending_ops.LIST),
}
# A value for each filter of a free value (closed ones are tried with every value).
FILTER_VALUES: dict[str, Any] = {
    "key_group_id": "backup-dallas",
    "data_unit_id": volser(1),
    "agent_id": "bench-01",
    "site_id": "dallas",
    "role": "operator",
    "type": "create_user",
    "expires_within_days": 30,
    "writer_generation": "LTO-8",  # docs/media.md: with --media-pools, the drives are LTO-8s
    "pool_id": "bench-s",
    "drive_generation": "LTO-8",
    "library": "SL3000",
}


# What people type into a list's search box (each list and the audit log get each of them).
SEARCHES = {
    "exact volser": volser(1),
    "volser prefix": volser(1)[:5],
    "key ID fragment": "4F2A9C",  # ~2 of a million random hex IDs
    "name fragment": "dallas",  # the key group and site of most rows: many matches
    "miss": "no such tape",
}


def list_queries() -> list[tuple[str, str, dict[str, Any]]]:
    """(label, client method, arguments): each list's first page, every sort in both orders,
    every filter (every value of a closed one) in the default sort, and each search in SEARCHES,
    as the manager asks them."""
    out = []
    for name, (method, spec) in LISTS.items():
        for sort in spec.sort_fields:
            for order in ("asc", "desc"):
                out.append((f"{name} sort={sort} {order}", method, {"sort": sort, "order": order}))
        for field, flt in spec.filters.items():
            if flt.convert.__name__ == "boolean":
                values: list[Any] = [True, False]
            elif flt.choices is not None:
                values = list(flt.choices)
            elif field == "state":
                values = list(pending_ops.STATES)
            else:
                values = [FILTER_VALUES[field]]
            out += [(f"{name} {field}={v}", method, {field: v}) for v in values]
        out += [
            (f"{name} search={text} ({what})", method, {"search": text}) for what, text in SEARCHES.items()
        ]
    out += [
        (f"audit search={text} ({what})", "list_audit_events", {"search": text})
        for what, text in SEARCHES.items()
    ]
    # The dashboard and its charts: a manager showing them asks every few seconds, and the bench's
    # backup keeper asks the dashboard every second.
    out += [("dashboard", "get_dashboard", {}), ("dashboard series (30 days)", "get_dashboard_series", {})]
    return out


def list_round(store: Store, repeats: int) -> dict[str, float]:
    """Each query's median latency (ms) over `repeats`, as the manager's client sees it."""
    client = store.kma.client("auditor")
    so = store.kma.client("so")  # users and quorum operations are the Security Officer's
    out = {}
    for label, method, kwargs in list_queries():
        who = so if method in ("list_users", "list_quorum_operations") else client
        call = getattr(who, method)
        paged = {} if method.startswith("get_") else {"limit": 100}
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            call(**paged, **kwargs)
            times.append((time.perf_counter() - began) * 1000)
        out[label] = statistics.median(times)
    return out


class Store:
    def __init__(self, root: Path, keys_total: int, tapes: int, issuing: bool = True) -> None:
        self.kma, self.address, self.files, self.uids, self.back_up = open_store(
            root, keys_total, tapes, issuing
        )
        self.tapes = tapes


def with_media_pools(kma: RunningKma, count: int) -> None:
    """`count` media pools (the store's S and N tapes in two of them, bound to the drives' group;
    the others of other volsers, one never encrypted) and every drive an LTO-8: each Write Key is
    then judged by pools, generation and relabel rules (kma/services/media/media_rules.py)."""
    so, op = kma.client("so"), kma.client("op")
    made = {p.id for p in so.list_media_pools(limit=1000).items}
    wanted = [("bench-s", "S*", "backup-dallas", False), ("bench-n", "N*", "backup-dallas", False)]
    wanted.append(("bench-plain", "X*", None, True))
    wanted += [
        (f"bench-{i:02d}", f"P{i:02d}0000-P{i:02d}9999", "backup-dallas", False) for i in range(count - 3)
    ]
    for pool_id, pattern, group, plain in wanted[:count]:
        if pool_id not in made:
            so.create_media_pool(pool_id, pattern, key_group_id=group, never_encrypted=plain)
    for agent in op.iter_agents():
        if agent.id.startswith("bench-") and agent.drive_generation != "LTO-8":
            op.update_agent(agent.id, drive_generation="LTO-8")


def main() -> int:
    exit_on_signals()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=20_000, help="keys in the large store")
    parser.add_argument("--tapes", type=int, default=4_000, help="tapes (data units) they are bound to")
    parser.add_argument("--store", type=Path, default=None, help="keep (and reuse) the large store here")
    parser.add_argument(
        "--fresh-store",
        type=Path,
        default=Path("/tmp/kma-scale-fresh"),
        help="the fresh store to compare with (400 keys on 200 tapes; reused)",
    )
    parser.add_argument(
        "--media-pools",
        type=int,
        default=0,
        help="media pools on the large store, its drives LTO-8 (docs/media.md): what the rules cost",
    )
    parser.add_argument("--build-only", action="store_true", help="fill the store, measure nothing")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, alternating the stores")
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per agent measurement")
    parser.add_argument("--repeats", type=int, default=5, help="requests per list query and round")
    args = parser.parse_args()
    if not 0 < args.tapes <= args.keys:
        parser.error("--tapes must be between 1 and --keys")
    root = args.store or Path(f"/tmp/kma-scale-{args.keys}-{args.tapes}")
    large = Store(root, args.keys, args.tapes)
    if args.build_only:
        large.kma.stop()
        return 0
    if args.media_pools:
        with_media_pools(large.kma, args.media_pools)
    fresh = Store(args.fresh_store, 400, 200)
    stores = {"fresh": fresh, "large": large}
    try:
        return report(args, stores)
    finally:
        for store in stores.values():
            store.kma.stop()


def report(args: argparse.Namespace, stores: dict[str, Store]) -> int:
    """Every measurement in rounds alternating the two stores (bench/rounds.py); medians, and the
    large/fresh ratio as the median of the per-round ratios."""
    result: dict[str, Any] = {"keys": args.keys, "tapes": args.tapes, "rounds": args.rounds}
    unreliable: list[str] = []
    agent: dict[str, Any] = {}
    for op in AGENT_OPS:
        runs = interleave(
            {
                name: (lambda s=store, o=op: agent_round(s, o, args.duration, f"{o}{time.time()}"))
                for name, store in stores.items()
            },
            args.rounds,
        )
        p99 = ratio_of(runs["large"], runs["fresh"], "p99_ms")
        agent[op] = {
            name: summarise(rounds) | {"errors": sum(r["errors"] for r in rounds)}
            for name, rounds in runs.items()
        } | {"p99_ratio": p99.as_dict()}
        unreliable += filter(None, [too_wide(f"{op} p99 large/fresh", p99)])
        f, g = agent[op]["fresh"], agent[op]["large"]
        print(
            f"{op:19} p99 fresh {f['p99_ms']:7.2f} ms  large {g['p99_ms']:7.2f} ms  large/fresh {p99}   "
            f"ops/s {f['ops_per_s']:5.0f} / {g['ops_per_s']:5.0f}  errors {f['errors']}/{g['errors']}",
            flush=True,
        )
    result["agent_path"] = agent
    runs = interleave(
        {name: (lambda s=store: list_round(s, args.repeats)) for name, store in stores.items()}, args.rounds
    )
    lists: dict[str, Any] = {}
    for label, _, _ in list_queries():
        fresh, large = (Spread.of([r[label] for r in runs[n]]) for n in ("fresh", "large"))
        lists[label] = {"fresh_ms": fresh.median, "large_ms": large.median, "large_spread": large.as_dict()}
        print(f"{label:52} fresh {fresh.median:7.1f} ms  large {large}", flush=True)
    result["lists"] = lists
    searches = {k: v for k, v in lists.items() if " search=" in k}
    result["slowest_search"] = max(searches.items(), key=lambda kv: kv[1]["large_ms"])[0]
    worst = max(lists.items(), key=lambda kv: kv[1]["large_ms"])
    result["slowest_list"] = {"query": worst[0], "ms": worst[1]["large_ms"]}
    result["lists_over_50ms"] = sorted(k for k, v in lists.items() if v["large_ms"] > 50)
    result["agent_p99_ratio_max"] = max(v["p99_ratio"]["median"] for v in agent.values())
    return finish(result, unreliable)


if __name__ == "__main__":
    raise SystemExit(main())
