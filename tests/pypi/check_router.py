#!/usr/bin/env python3
"""`pagedllm serve` replicas behind vLLM's own load balancer, `vllm-router` (PyPI), end to end.

    check_router.py --pagedllm BINARY [--router PATH_TO_vllm-router]

Three replicas of the tiny model on loopback, then the router over them:
  0. What the router forwards: a router (each policy) in front of a recording server shows the
     fields it adds to request bodies; each added field, with the router's value, is then sent to a
     replica directly, and pagedllm must accept every one (a field it refused would fail every
     request sent through the router; this is how the check found the four SGLang fields).
  1. Every policy: 12 completions and 12 streamed chats (three groups of prompts sharing a long
     prefix, one X-Session-ID per group), each 200 and well formed; per-replica spreads from the
     replicas' vllm:request_success_total (round_robin: equal shares; cache_aware: each group on
     one replica). kv_aware without KV event sources: whatever the router does is recorded.
  2. Failover (round_robin, cache_aware): SIGKILL the replica serving a long stream (n=4 x 2000
     tokens) while three long and a stream of short completions go through the router, with 1 s
     health checks, retries and a one-failure circuit breaker (FAILOVER_FLAGS): the completions in
     flight on it and every one sent after the kill succeed; the cut stream ends without
     `data: [DONE]`; then all requests land on the two left. The same with the router's default
     flags is recorded, not asserted.
  3. Drain: SIGTERM the replica running a long request: it completes, the replica answers 503
     (Retry-After) and /health 503, the router's other requests succeed, the replica exits 0.
  4. Every replica's /metrics (prometheus_client): each replica's vllm:request_success_total equals
     the successes the clients saw it answer (pagedllm's response ids name the process).
  5. (Run before 4.) The router's vLLM prefill/decode mode over two replicas: pagedllm has no KV
     transfer, so each request must be refused plainly (400 naming kv_transfer_params).
A request that fails is reported with the start of its body (a 400 names the field refused).
Bounded: every request has a timeout, a watchdog ends the run after 300 s, and every process
started is killed on the way out. Processes and HTTP: router_harness.py, beside this file.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ left in tests/pypi by the import below
# The script's own directory is sys.path[0] when it is run as `python tests/pypi/check_router.py`.
from router_harness import (ANSWERED, CHAT, COMPLETION, FAILURES, SUCCEEDED, Router, check,  # noqa: E402
                            chat_stream_ok, completion_ok, count_success, delta, describe, describe_stream,
                            kill_all, log_tail, note, reply_id, request, router_added_fields, router_counters,
                            serving, start_replicas, start_watchdog, stream, successes, total)

WATCHDOG_S = 300
POLICIES = ["round_robin", "random", "power_of_two", "cache_aware", "consistent_hash", "sticky_least_loaded",
            "kv_aware"]


# --- 0. what the router forwards -----------------------------------------------------------------

def refused_router_fields(replica, added):
    """{(route, field): (value, the reply)} for the fields, with the router's values, that a replica
    refuses when sent them one at a time."""
    refused = {}
    for path, fields in added.items():
        base = COMPLETION if path == "/v1/completions" else CHAT
        for name, value in fields.items():
            status, _, body = request(replica.port, "POST", path, {**base, name: value}, timeout=30)
            if status == 200:
                count_success(reply_id(body))
            else:
                refused[(path, name)] = (value, describe(status, body))
    return refused


# --- 1. policies ---------------------------------------------------------------------------------

def group_prompt(group, item):
    return (f"Chapter {group}: " + f"the {['red', 'green', 'blue'][group]} lantern swung over the harbour " * 6 +
            f"and then, on day {item}, ")


def group_chat(group, item):
    return [{"role": "system", "content": group_prompt(group, 0)},
            {"role": "user", "content": f"What happened on day {item}?"}]


def run_groups(router, replicas, label, groups=3, per_group=4, max_tokens=6):
    """Three groups of completions, then three of streamed chats, one at a time; the per-replica
    spread of each group. Returns ([spread per group], problems)."""
    spreads = []
    problems = []
    for kind in ("completion", "chat"):
        for group in range(groups):
            before = successes(replicas)
            for item in range(per_group):
                headers = {"X-Session-ID": f"{label}-session-{group}"}
                if kind == "completion":
                    status, _, body = request(router.port, "POST", "/v1/completions",
                                              {"model": "tiny", "prompt": group_prompt(group, item),
                                               "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True},
                                              headers=headers, timeout=60)
                    if completion_ok(status, body, max_tokens):
                        count_success(reply_id(body))
                    else:
                        problems.append(f"completion {group}/{item}: {describe(status, body)}")
                else:
                    result = stream(router.port, "/v1/chat/completions",
                                    {"model": "tiny", "messages": group_chat(group, item), "max_tokens": max_tokens,
                                     "temperature": 0, "ignore_eos": True, "stream": True},
                                    headers=headers, timeout=60)
                    if chat_stream_ok(result):
                        count_success(result["events"][0].get("id"))
                    else:
                        problems.append(f"stream {group}/{item}: {describe_stream(result)}")
            spreads.append(delta(successes(replicas), before))
    return spreads, problems


def policy_checks(router_binary, replicas):
    urls = [r.url for r in replicas]
    for policy in POLICIES:
        router = Router(router_binary, urls, policy)
        try:
            if not router.wait_ready():
                check(policy == "kv_aware", f"{policy}: the router starts over three replicas"
                      + (" (kv_aware refusing to start without KV event sources is acceptable)"
                         if policy == "kv_aware" else ""), log_tail(router.log.name))
                note(f"{policy}: router exited {router.process.poll()}: {log_tail(router.log.name, 3)}")
                continue
            if policy == "round_robin":
                status, _, body = request(router.port, "GET", "/v1/models", timeout=10)
                models = [m.get("id") for m in json.loads(body).get("data", [])] if status == 200 else body
                check(models == ["tiny"], f"GET /v1/models through the router: the replicas' model ({models})")
            started = time.time()
            before = successes(replicas)
            answered_before = [ANSWERED.get(r.tag, 0) for r in replicas]
            spreads, problems = run_groups(router, replicas, policy)
            grown = delta(successes(replicas), before)
            answered = [ANSWERED.get(r.tag, 0) - b for r, b in zip(replicas, answered_before)]
            seconds = time.time() - started
            ok = check(not problems and None not in grown and sum(grown) == 24 and
                       all(None not in s and sum(s) == 4 for s in spreads),
                       f"{policy}: 12 completions and 12 streamed chats through the router, all 200 and well formed "
                       f"(replica totals {grown}, {seconds:.1f} s)",
                       problems + [f"group spreads {spreads}"])
            note(f"{policy}: per-group spreads over the 3 replicas (completions x3, chats x3): {spreads}")
            check(answered == grown, f"{policy}: each replica's vllm:request_success_total grew by the requests "
                  f"the clients saw it answer (by response id: {answered})")
            routed = router.metrics()
            if routed and "vllm_router_policy_decisions" in routed:
                decisions = {s.labels.get("worker"): int(s.value)
                             for s in routed["vllm_router_policy_decisions"].samples if s.name.endswith("_total")}
                mine = [decisions.get(u, 0) for u in urls]
                note(f"{policy}: the router's own metrics (its --prometheus-port): policy decisions per worker {mine}")
            if policy == "round_robin":
                check(ok and grown == [8, 8, 8], f"round_robin: each replica got a third of the requests ({grown})")
            if policy == "cache_aware":
                check(ok and all(sorted(s)[-1] == 4 for s in spreads),
                      f"cache_aware: the requests of each shared-prefix group all went to one replica ({spreads})")
            if policy in ("consistent_hash", "sticky_least_loaded"):
                sticky = all(sorted(s)[-1] == 4 for s in spreads)
                note(f"{policy}: each X-Session-ID group on one replica: {sticky}")
            if policy == "kv_aware":
                text = "\n".join(log_tail(router.log.name, 400))
                missing = sorted(set(re.findall(r"(/get_server_info|/kv_event_sources)[^\n]*404", text)))
                note(f"kv_aware without --kv-event-source: the router asked each replica for {missing or 'nothing'} "
                     "(404 from pagedllm) and routes without a KV index")
                for line in log_tail(router.log.name, 400):
                    if "kv_event_sources" in line and "404" in line:
                        note(f"kv_aware router log: {line[line.find('kv_index'):][:200]}")
                        break
        finally:
            router.stop()


# --- 2. failover ---------------------------------------------------------------------------------

FAILOVER_FLAGS = ["--health-check-interval-secs", "1", "--health-failure-threshold", "1",
                  "--health-check-timeout-secs", "1", "--retry-max-retries", "5",
                  "--retry-initial-backoff-ms", "50", "--retry-max-backoff-ms", "1000",
                  "--cb-failure-threshold", "1", "--cb-timeout-duration-secs", "5"]


def failover_check(router_binary, replicas, policy, flags=FAILOVER_FLAGS):
    """SIGKILL the replica serving a long stream while completions go through the router. With the
    router's default flags (flags=[]) what the clients see is recorded, not asserted."""
    label = f"{policy}{'' if flags else ', default router flags'}"
    router = Router(router_binary, [r.url for r in replicas], policy, *flags)

    def verdict(condition, what, details=()):
        if flags:
            return check(condition, what, details)
        note(f"{'yes' if condition else 'NO'}: {what}")
        return condition

    outcomes = []  # (start, end, ok, what)
    stop = threading.Event()
    long_result = {}
    first_event = threading.Event()
    try:
        if not check(router.wait_ready(), f"failover ({label}): the router starts", log_tail(router.log.name)):
            return None

        def long_stream():
            long_result.update(stream(router.port, "/v1/chat/completions",
                                      {"model": "tiny", "messages": [{"role": "user", "content": "Tell a long story"}],
                                       "n": 4, "max_tokens": 2000, "ignore_eos": True, "stream": True},
                                      timeout=90, on_event=lambda n: first_event.set()))

        def long_completion(index):
            body = {"model": "tiny", "prompt": f"A long answer, number {index}:", "max_tokens": 1500,
                    "temperature": 0, "ignore_eos": True}
            start = time.time()
            status, _, reply = request(router.port, "POST", "/v1/completions", body, timeout=60)
            ok = completion_ok(status, reply, 1500)
            if ok:
                count_success(reply_id(reply))
            outcomes.append((start, time.time(), ok, describe(status, reply)))

        def sender(index):
            item = 0
            while not stop.is_set():
                item += 1
                body = {"model": "tiny", "prompt": group_prompt(index % 3, item), "max_tokens": 6,
                        "temperature": 0, "ignore_eos": True}
                start = time.time()
                status, _, reply = request(router.port, "POST", "/v1/completions", body, timeout=60)
                ok = completion_ok(status, reply, 6)
                if ok:
                    count_success(reply_id(reply))
                outcomes.append((start, time.time(), ok, describe(status, reply)))
                time.sleep(0.02)

        streamer = threading.Thread(target=long_stream, daemon=True)
        streamer.start()
        deadline = time.time() + 30
        while streamer.is_alive() and not first_event.wait(0.1) and time.time() < deadline:
            pass
        if not check(first_event.is_set(), f"failover ({label}): a long stream started through the router",
                     [describe_stream(long_result)] if long_result else []):
            return None
        victim = serving(replicas, waiting=streamer)
        if not check(victim is not None, f"failover ({label}): the replica serving the stream is found"):
            return None
        # Three long completions (round_robin puts one on each replica), then two clients sending
        # short ones without pause.
        senders = [threading.Thread(target=long_completion, args=(i,), daemon=True) for i in range(3)]
        senders += [threading.Thread(target=sender, args=(i,), daemon=True) for i in range(2)]
        for thread in senders:
            thread.start()
        time.sleep(0.15)
        families = victim.families()
        victim.final_success = total(families, "vllm:request_success", "_total")
        running = total(families, "vllm:num_requests_running") or 0
        stream_running = streamer.is_alive() and not long_result
        kill_time = time.time()
        victim.kill()
        time.sleep(4.0)
        stop.set()
        for thread in senders:
            thread.join(70)
        streamer.join(90)

        before = [o for o in outcomes if o[1] < kill_time]
        during = [o for o in outcomes if o[0] < kill_time <= o[1]]
        after = [o for o in outcomes if o[0] >= kill_time]
        failed = [o for o in outcomes if not o[2]]
        note(f"failover ({label}): {len(outcomes)} completions sent: {len(before)} finished before the kill, "
             f"{len(during)} in flight at the kill (on the killed replica, besides the stream: "
             f"{max(0, int(running) - 1)}), {len(after)} sent after it; failures: "
             f"{[(round(o[0] - kill_time, 2), o[3][:120]) for o in failed] or 'none'}")
        verdict(all(o[2] for o in during), f"failover ({label}): the completions in flight at the SIGKILL "
                f"succeeded (router retry): {sum(o[2] for o in during)}/{len(during)}",
                [o[3] for o in during if not o[2]])
        verdict(len(after) > 0 and all(o[2] for o in after),
                f"failover ({label}): every completion sent after the SIGKILL succeeded: "
                f"{sum(o[2] for o in after)}/{len(after)}", [o[3] for o in after if not o[2]][:5])
        cut = long_result
        finish = [c.get("finish_reason") for e in cut.get("events", []) for c in e.get("choices", [])
                  if c.get("finish_reason")]
        note(f"failover ({label}): the stream on the killed replica: status {cut.get('status')}, "
             f"{len(cut.get('events', []))} events, finish_reason {finish or 'none'}, [DONE] {cut.get('done')}, "
             f"transport error at the client: {cut.get('error')}")
        check(stream_running, f"failover ({label}): the long stream was still running at the SIGKILL")
        check(cut.get("status") == 200 and not cut.get("done"),
              f"failover ({label}): the stream cut by the SIGKILL ends without `data: [DONE]` "
              "(the client can tell it is incomplete)")
        if cut.get("done"):
            count_success(cut["events"][0].get("id"))

        survivors = [r for r in replicas if r is not victim]
        before_counts = successes(survivors)
        statuses = []
        for item in range(12):
            status, _, body = request(router.port, "POST", "/v1/completions",
                                      {"model": "tiny", "prompt": f"after the kill {item}", "max_tokens": 5,
                                       "ignore_eos": True}, timeout=60)
            statuses.append(status)
            if completion_ok(status, body, 5):
                count_success(reply_id(body))
        spread = delta(successes(survivors), before_counts)
        verdict(statuses == [200] * 12 and sum(spread) == 12,
                f"failover ({label}): afterwards 12 completions all 200, on the two replicas left ({spread})",
                [f"statuses {statuses}"])
        routed = router.metrics() or {}
        family = routed.get("vllm_router_worker_health")
        health = {s.labels.get("worker"): s.value for s in family.samples} if family else {}
        note(f"failover ({label}): router's vllm_router_worker_health for the killed replica: "
             f"{health.get(victim.url)}")
        note(f"failover ({label}): router metrics: {router_counters(routed)}")
        return victim
    finally:
        stop.set()
        router.stop()


# --- 3. drain ------------------------------------------------------------------------------------

def drain_check(router_binary, replicas):
    router = Router(router_binary, [r.url for r in replicas], "round_robin", *FAILOVER_FLAGS)
    long_result = {}
    try:
        if not check(router.wait_ready(), "drain: the router starts", log_tail(router.log.name)):
            return None

        def long_request():
            started = time.time()
            status, _, body = request(router.port, "POST", "/v1/completions",
                                      {"model": "tiny", "prompt": "A long one", "n": 4, "max_tokens": 2000,
                                       "temperature": 0, "ignore_eos": True}, timeout=60)
            long_result.update(status=status, body=body, seconds=time.time() - started)

        thread = threading.Thread(target=long_request, daemon=True)
        thread.start()
        victim = serving(replicas, waiting=thread)
        if not check(victim is not None, "drain: the replica running the long request is found",
                     [describe(long_result["status"], long_result["body"])] if long_result else []):
            return None
        victim.final_success = victim.success()
        term_time = time.time()
        victim.process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        health, _, _ = request(victim.port, "GET", "/health", timeout=5)
        status, headers, body = request(victim.port, "POST", "/v1/completions", COMPLETION, timeout=10)
        check(health == 503, f"drain: the draining replica's /health answers 503 ({health})")
        check(status == 503 and (headers or {}).get("retry-after") == "1",
              f"drain: the draining replica refuses a new request with 503 and Retry-After: 1 "
              f"({status}, Retry-After {(headers or {}).get('retry-after')})")
        others = [r for r in replicas if r is not victim]
        before = successes(others)
        statuses = []
        for item in range(12):
            status, _, body = request(router.port, "POST", "/v1/completions",
                                      {"model": "tiny", "prompt": f"during the drain {item}", "max_tokens": 5,
                                       "ignore_eos": True}, timeout=60)
            statuses.append(status)
            if completion_ok(status, body, 5):
                count_success(reply_id(body))
        during = time.time() - term_time
        spread = delta(successes(others), before)
        still_running = victim.process.poll() is None
        drained_count = victim.success() if still_running else None
        check(statuses == [200] * 12 and sum(spread) == 12,
              f"drain: 12 completions through the router while it drains, all 200, on the other two ({spread}, "
              f"{during:.1f} s after SIGTERM, the long request still running: {still_running})",
              [f"statuses {statuses}"])
        if drained_count is not None:
            check(drained_count == victim.final_success,
                  f"drain: the draining replica finished no new request ({drained_count} = {victim.final_success})")
        thread.join(60)
        check(completion_ok(long_result.get("status"), long_result.get("body", b""), 2000, n=4),
              f"drain: the request in flight at SIGTERM completed: 4 x 2000 tokens, 200 "
              f"({long_result.get('seconds', 0):.1f} s)",
              [describe(long_result.get("status"), long_result.get("body"))])
        if long_result.get("status") == 200:
            count_success(reply_id(long_result["body"]))
            victim.final_success += 1
        try:
            code = victim.process.wait(timeout=35)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"drain: the replica exited 0 after its request finished ({code}, "
              f"{time.time() - term_time:.1f} s after SIGTERM)")
        routed = router.metrics() or {}
        note(f"drain: router metrics: {router_counters(routed)}")
        return victim
    finally:
        router.stop()


# --- 5. prefill/decode disaggregation ------------------------------------------------------------

def disaggregation_check(router_binary, prefill, decode):
    """The router's vLLM P/D mode over a prefill and a decode replica: pagedllm has no KV transfer,
    so it must refuse the router's kv_transfer_params plainly (400 naming the field)."""
    router = Router(router_binary, None, "round_robin", "--vllm-pd-disaggregation", "--prefill", prefill.url,
                    "--decode", decode.url)
    try:
        if not check(router.wait_ready(), "P/D mode: the router starts over a prefill and a decode replica",
                     log_tail(router.log.name)):
            return
        for path, body in (("/v1/completions", COMPLETION), ("/v1/chat/completions", CHAT)):
            status, _, reply = request(router.port, "POST", path, body, timeout=30)
            check(status == 400 and b"kv_transfer_params" in reply,
                  f"P/D mode: {path} is refused plainly, pagedllm having no KV transfer ({describe(status, reply)})")
    finally:
        router.stop()


# --- main ----------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pagedllm", required=True)
    parser.add_argument("--router", default=os.path.join(os.path.dirname(sys.executable), "vllm-router"))
    args = parser.parse_args()
    if not os.path.exists(args.router):
        sys.exit(f"no vllm-router at {args.router} (pip install vllm-router)")

    timer = start_watchdog(WATCHDOG_S, "check_router")
    started = time.time()
    killed, drained = [], []
    try:
        replicas = start_replicas(args.pagedllm, ["a", "b", "c"])
        if len(replicas) != 3:
            sys.exit(1)
        note(f"replicas on ports {[r.port for r in replicas]}")

        # 0. What the router adds to request bodies: pagedllm must accept all of it.
        rewrites = {}  # the fields added, as JSON -> the policies that add them
        for policy in POLICIES:
            added = router_added_fields(args.router, policy)
            if added is not None:
                rewrites.setdefault(json.dumps(added), []).append(policy)
        for text, policies in rewrites.items():
            added = json.loads(text)
            names = ", ".join(policies)
            note(f"{names}: fields the router adds: " +
                 "; ".join(f"{path}: {json.dumps(fields)}" for path, fields in added.items()))
            refused = refused_router_fields(replicas[0], added)
            check(not refused, f"{names}: pagedllm accepts every field vllm-router adds to request bodies",
                  [f"{path}: {name}={json.dumps(v[0])} -> {v[1]}" for (path, name), v in refused.items()])

        # 1. Policies.
        policy_checks(args.router, replicas)

        # 2. Failover, twice; a fresh replica replaces each one killed.
        names = iter("defg")
        for policy, flags in (("round_robin", FAILOVER_FLAGS), ("cache_aware", FAILOVER_FLAGS), ("cache_aware", [])):
            victim = failover_check(args.router, replicas, policy, flags)
            if victim is None:
                continue
            killed.append(victim)
            replicas = [r for r in replicas if r is not victim]
            replicas += start_replicas(args.pagedllm, [next(names)])

        # 3. Drain.
        victim = drain_check(args.router, replicas)
        if victim is not None:
            drained.append(victim)
            replicas = [r for r in replicas if r is not victim]

        # 5. Prefill/decode disaggregation (refused requests: no change to the totals).
        if len(replicas) >= 2:
            disaggregation_check(args.router, replicas[0], replicas[1])

        # 4. The totals.
        live = successes(replicas)
        check(None not in live, f"every live replica's /metrics parses with prometheus_client ({live})")
        unrecognised = {tag: n for tag, n in ANSWERED.items() if tag.startswith("unrecognised")}
        check(not unrecognised and sum(ANSWERED.values()) == SUCCEEDED[0],
              f"every success the clients saw carries a replica's response id ({SUCCEEDED[0]} requests)",
              [f"{tag}: {n}" for tag, n in unrecognised.items()])
        for replica, count in zip(replicas, live):
            check(count == ANSWERED.get(replica.tag, 0),
                  f"replica {replica.name} (live): vllm:request_success_total {count} = the requests the clients "
                  f"saw it answer ({ANSWERED.get(replica.tag, 0)})")
        for replica in drained:
            check(replica.final_success == ANSWERED.get(replica.tag, 0),
                  f"replica {replica.name} (drained): vllm:request_success_total while draining, plus the request "
                  f"it finished, {replica.final_success} = the requests the clients saw it answer "
                  f"({ANSWERED.get(replica.tag, 0)})")
        for replica in killed:
            answered = ANSWERED.get(replica.tag, 0)
            check(replica.final_success is not None and replica.final_success <= answered,
                  f"replica {replica.name} (killed): vllm:request_success_total scraped just before the SIGKILL, "
                  f"{replica.final_success}, <= the requests the clients saw it answer ({answered}; the difference "
                  "finished between the scrape and the kill)")
        overall = sum(live) + sum(r.final_success or 0 for r in drained + killed) if None not in live else None
        note(f"vllm:request_success_total over all {len(replicas) + len(drained) + len(killed)} replicas: "
             f"{overall}; successes the clients saw: {SUCCEEDED[0]}")
    finally:
        kill_all()
        timer.cancel()
    print(f"  note: {time.time() - started:.0f} s in all", flush=True)
    if FAILURES:
        print(f"check_router: {len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("check_router: all checks passed")


if __name__ == "__main__":
    main()