#!/usr/bin/env python3
"""A small discrete-event model of bridges sharing an agent's partitions (issue 44, section 5).

Calibrated on `cargo bench -p agentlog-integration --bench scale` (its JSON: `--calibration
PATH`; without it, the run the benches README reports, kept reduced in
`scale_calibration.json` beside this file by `--keep`), it first predicts that bench's own 1/2/4-bridge runs from the 1-bridge figures and
prints prediction beside measurement, then extrapolates to 100 bridges, P = 1024 and 1 B
tasks: memory and apply CPU per bridge, unavailability after 1, 5 and 33 simultaneous
failures, and the ListTasks fan-out's latency and CPU.

    python3 tests/benches/scale_model.py [--calibration /tmp/agentlog-scale.json [--keep]]
        [--bridges 100] [--partitions 1024] [--tasks 1e9] [--write-rate 10000]
        [--cores 2] [--trials 200] [--seed 1]

Standard library only. The model's rules (what it assumes; `skills/a2a-bridge/partitions.md`
says what the code does):
- Ownership is static: owner of p = p mod N, successor = the next member. A failed owner's
  partition is unavailable until its successor holds it ready (hold on demand at the first
  request after the failure: restore from p's checkpoint, replay its tail). Detection: a
  killed process refuses connections at once; a lost host is found by the forward timeout
  (2 s). If the successor failed too, p waits for the failed members' eviction (the lease,
  10 s, under dynamic membership) and is then held, from its checkpoint, by a survivor
  (spread evenly).
- A bridge restores the partitions it takes over on its cores (`--cores` each), one hold a
  core at a time, each taking the hold's measured CPU time at p's task count (linear fit: on
  a core of its own a hold waits for nothing else; the bench's wall times are the machine's
  load's). Reading a checkpoint over the network (Iggy) would add its transfer.
- A ListTasks fan-out: the member asked serves its own share and asks every other owner for
  theirs at once; each answer is then parsed and merged on the asking member's one thread
  (a share's page: 50 tasks). Shares are served on the asked members' cores.
"""

import argparse
import heapq
import json
import math
import os
import random
import statistics

# The run the benches README reports (`scale` section), reduced (`--keep`): what the model
# reads when no `--calibration` is given.
KEPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scale_calibration.json")

FORWARD_CPU_US = 44.5  # tests/benches/README.md, forward.rs: a forwarded GetTask's CPU over a direct one
FORWARD_TIMEOUT_S = 2.0  # Forwarding's default timeout
LEASE_S = 10.0  # members::DEFAULT_LEASE
PAGE = 50


def quantile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round((len(s) - 1) * q)))]


def linear_fit(xs, ys):
    """y = a + b x by least squares of the relative error (weights 1/y²): the small task
    counts' fixed part is not drowned by the large ones."""
    w = [1 / (y * y) for y in ys]
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, xs)) / sw
    my = sum(wi * y for wi, y in zip(w, ys)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, xs))
    b = sum(wi * (x - mx) * (y - my) for wi, x, y in zip(w, xs, ys)) / sxx if sxx else 0.0
    return max(0.0, my - b * mx), b


class Sampler:
    """Draws from a measured latency distribution: its empirical quantiles, with the top 1%
    continued by an exponential of the top 1%'s mean excess (so a max of 100 draws is not
    capped at the largest sample measured)."""

    def __init__(self, samples, rng):
        self.s = sorted(samples)
        self.rng = rng
        top = self.s[int(len(self.s) * 0.99):]
        self.threshold = top[0]
        self.excess = max(1e-9, statistics.mean(x - self.threshold for x in top))

    def draw(self):
        u = self.rng.random()
        if u >= 0.99:
            return self.threshold + self.rng.expovariate(1.0 / self.excess)
        i = u * (len(self.s) - 1)
        lo = int(i)
        return self.s[lo] + (self.s[min(lo + 1, len(self.s) - 1)] - self.s[lo]) * (i - lo)


# --- the calibration -----------------------------------------------------------------------

def calibrate(run):
    """The model's parameters from the bench's JSON."""
    apply = {(r["n"], r["mode"]): r for r in run["apply"]}
    one = apply[(1, "replay")]
    hold = run["hold"]
    xs = [h["tasks"] + h["tail_tasks"] for h in hold]
    wall_a, wall_b = linear_fit(xs, [statistics.median(h["ready_s"]) for h in hold])
    cpu_a, cpu_b = linear_fit(xs, [statistics.median(h["cpu_s"]) for h in hold])
    lst = run["list"]
    return {
        "apply_ns_per_record": one["ns_per_record"],
        # Following appends one at a time, a bridge's thread wakes for nearly every record:
        # the live cost a record grows as its share shrinks; the worst measured is the bound.
        "apply_live_ns_per_record": max(r["ns_per_record"] for r in run["apply"] if r["mode"] == "live"),
        "bytes_per_task": max(apply[(1, m)]["bytes_per_task"] for m in ("live", "replay")),
        "bytes_per_task_restored": statistics.median(hold[-1]["heap_bytes"])
        / (hold[-1]["tasks"] + hold[-1]["tail_tasks"]),
        "hold_wall": (wall_a, wall_b),
        "hold_cpu": (cpu_a, cpu_b),
        "list": lst,
        "run": run,
    }


# --- a processor pool ----------------------------------------------------------------------

def fan_out(n, cores, costs, noise, shared_cores):
    """One ListTasks fan-out's latency (µs) at n members, from CPU costs: the asking member's
    own work `costs["own"]` (its listing, the request and the answer), each share's
    `costs["share"]` on the asked member, `costs["answer"]` on the asking member's one thread
    per answer (after its own work, in arrival order), and the client's `costs["client"]`.
    Each job's time is its cost × a draw of `noise()` (the measured latency distribution over
    its median: what the machine did to a request). `shared_cores`: every job on one pool of
    `cores` (the bench's machine); else each member has its own cores."""
    if shared_cores:
        free = [0.0] * cores  # when each core is next free
        heapq.heapify(free)

        def run(ready, service):
            start = max(ready, heapq.heappop(free))
            heapq.heappush(free, start + service)
            return start + service
    else:
        def run(ready, service):
            return ready + service
    own_done = run(0.0, costs["own"] * noise())
    answers = sorted(run(0.0, costs["share"] * noise()) for _ in range(n - 1))
    t = own_done
    for arrived in answers:
        t = run(max(t, arrived), costs["answer"] * noise())
    return t + costs["client"]


def fan_out_figures(params, n, cores, shared, trials, rng, share_samples):
    lst = params["list"]
    median = statistics.median(share_samples)
    spread = Sampler([x / median for x in share_samples], rng)
    share_cpu = lst.get(f"n{n}", lst["n2"]).get("share_cpu_us", lst["n2"]["share_cpu_us"])
    costs = {"own": lst["n1"]["whole_cpu_us"], "share": share_cpu,
             "answer": params["answer_us"], "client": params["client_us"]}
    draws = [fan_out(n, cores, costs, spread.draw, shared) for _ in range(trials)]
    return quantile(draws, 0.5), quantile(draws, 0.99)


# --- failures ------------------------------------------------------------------------------

def unavailability(params, n, partitions, tasks, failed_count, cores, trials, rng, detect_s):
    """Per partition that a failure makes unavailable, the seconds until it is held ready again,
    over `trials` random sets of `failed_count` members failing at once."""
    a, b = params["hold_cpu"]
    per_partition = tasks / partitions
    hold_s = a + b * per_partition
    waits = []
    affected = []
    orphaned = []
    for _ in range(trials):
        failed = set(rng.sample(range(n), failed_count))
        survivors = [m for m in range(n) if m not in failed]
        queues = {}  # member -> list of hold jobs' ready times
        orphans = []
        for p in range(partitions):
            owner = p % n
            if owner not in failed:
                continue
            successor = (owner + 1) % n
            if successor not in failed:
                queues.setdefault(successor, []).append(detect_s)
            else:
                orphans.append(p)
        # Orphans: after the eviction, spread over the survivors.
        for k, p in enumerate(orphans):
            queues.setdefault(survivors[k % len(survivors)], []).append(LEASE_S)
        orphaned.append(len(orphans))
        count = 0
        for ready_times in queues.values():
            free = [0.0] * cores
            for ready in sorted(ready_times):
                start = max(ready, heapq.heappop(free))
                heapq.heappush(free, start + hold_s)
                waits.append(start + hold_s)
                count += 1
        affected.append(count)
    return waits, statistics.mean(affected), statistics.mean(orphaned)


# --- the validation against the bench's own runs --------------------------------------------

def validate(params, args, rng):
    run = params["run"]
    rpt = run["records_per_task"]
    print("## Validation: the model's predictions of the bench's 1/2/4-bridge runs\n")
    print("| what | N | predicted | measured | measured / predicted |")
    print("| --- | --- | --- | --- | --- |")
    apply = {(r["n"], r["mode"]): r for r in run["apply"]}
    for r in run["apply"]:
        if r["n"] == 1:
            continue
        one = apply[(1, r["mode"])]
        cpu_pred = statistics.mean(one["ns_per_record"] * h * rpt for h in r["tasks_held"]) / 1e6
        cpu_meas = statistics.mean(r["cpu_ns"]) / 1e6
        print(f"| apply CPU ms a bridge ({r['mode']}; N = 1's ns a record × its records) | {r['n']} "
              f"| {cpu_pred:.0f} | {cpu_meas:.0f} | {cpu_meas / cpu_pred:.2f} |")
        pred = statistics.mean(one["bytes_per_task"] * h for h in r["tasks_held"]) / 1e6
        meas = statistics.mean(r["freed_bytes"]) / 1e6
        print(f"| heap MB a bridge ({r['mode']}; its tasks': N = 1's bytes a task × its tasks) "
              f"| {r['n']} | {pred:.2f} | {meas:.2f} | {meas / pred:.2f} |")
        if r["mode"] == "replay":
            share = r["tasks"] / r["n"]
            sigma = math.sqrt(r["tasks"] * (1 / r["n"]) * (1 - 1 / r["n"]))
            worst = max((h - share for h in r["tasks_held"]), key=abs)
            print(f"| tasks a bridge: all / N ± binomial σ | {r['n']} | {share:.0f} ± {sigma:.0f} "
                  f"({100 * sigma / share:.2f}%) | worst {worst:+.0f} ({100 * worst / share:+.2f}%) "
                  f"| {abs(worst) / sigma:.1f} σ |")
    lst = params["list"]
    for n in (2, 4):
        key = f"n{n}"
        measured = lst[key]["whole_us"]
        p50, p99 = fan_out_figures(params, n, args.cores, True, 20000, rng, lst[key]["share_us"])
        print(f"| ListTasks fan-out µs p50 (on {args.cores} shared cores) | {n} | {p50:.0f} "
              f"| {quantile(measured, 0.5):.0f} | {quantile(measured, 0.5) / p50:.2f} |")
        print(f"| ListTasks fan-out µs p99 | {n} | {p99:.0f} | {quantile(measured, 0.99):.0f} "
              f"| {quantile(measured, 0.99) / p99:.2f} |")
        cpu_pred = lst["n1"]["whole_cpu_us"] + (n - 1) * (lst[key]["share_cpu_us"] + params["answer_us"])
        print(f"| ListTasks CPU µs, all members | {n} | {cpu_pred:.0f} | {lst[key]['whole_cpu_us']:.0f} "
              f"| {lst[key]['whole_cpu_us'] / cpu_pred:.2f} |")
    moves = lst["n4"].get("moves", [])
    if moves:
        a, b = params["hold_cpu"]
        forward_us = statistics.median(m["then_us"] for m in moves)
        pred = [(forward_us + (a + b * m["tasks"]) * 1e6) / 1e3 for m in moves]
        meas = [m["first_us"] / 1e3 for m in moves]
        print(f"| a stopped member's partition unavailable, ms p50 / max (forwarded GetTask + hold "
              f"at its tasks) | 4 | {statistics.median(pred):.2f} / {max(pred):.2f} "
              f"| {statistics.median(meas):.2f} / {max(meas):.2f} "
              f"| {statistics.median(meas) / statistics.median(pred):.2f} |")
        if "first_cpu_us" in moves[0]:
            # The successor's CPU for that first request: its hold plus a GetTask served (its
            # CPU for the next one).
            pred = [(a + b * m["tasks"]) * 1e3 + m["then_cpu_us"][0] / 1e3 for m in moves]
            meas = [m["first_cpu_us"][0] / 1e3 for m in moves]
            print(f"| the same, the successor's CPU ms p50 / max (hold at its tasks + a GetTask) | 4 "
                  f"| {statistics.median(pred):.2f} / {max(pred):.2f} | {statistics.median(meas):.2f} / "
                  f"{max(meas):.2f} | {statistics.median(meas) / statistics.median(pred):.2f} |")
    print()


def extrapolate(params, args, rng):
    n, parts, tasks = args.bridges, args.partitions, args.tasks
    rpt = params["run"]["records_per_task"]
    lst = params["list"]
    print(f"## Extrapolation: {n} bridges, P = {parts}, {tasks:.3g} tasks, {args.cores} cores a "
          f"bridge, writes of {args.write_rate:.0f} tasks/s\n")
    per_partition = tasks / parts
    most = math.ceil(parts / n) * per_partition
    least = math.floor(parts / n) * per_partition
    bpt = params["bytes_per_task"]
    print("| what | figure |")
    print("| --- | --- |")
    print(f"| tasks a bridge (⌊P/N⌋ or ⌈P/N⌉ partitions of {per_partition:,.0f}) | "
          f"{least:,.0f} to {most:,.0f} |")
    rbpt = params["bytes_per_task_restored"]
    print(f"| view heap a bridge at {rbpt:.0f} (restored from checkpoints) to {bpt:.0f} B a task "
          f"(grown by applying) | {least * rbpt / 1e9:.2f} to {most * bpt / 1e9:.2f} GB (a "
          f"successor standing in for one failed member: up to {(most + most) * bpt / 1e9:.2f} GB) |")
    print(f"| the same on one bridge holding everything | {tasks * bpt / 1e9:.0f} GB |")
    rate = args.write_rate * rpt
    cpu = rate / n * params["apply_ns_per_record"] / 1e9
    live = rate / n * params["apply_live_ns_per_record"] / 1e9
    print(f"| apply CPU a bridge ({rate:,.0f} records/s in all) | {cpu * 100:.2f}% of a core "
          f"(at the worst live cost a record measured: {live * 100:.2f}%; one bridge holding all: "
          f"{cpu * n * 100:.0f}%) |")
    fwd = (n - 1) / n * FORWARD_CPU_US
    print(f"| forward CPU a request behind a round-robin balancer ((N-1)/N forwarded × "
          f"{FORWARD_CPU_US} µs) | {fwd:.1f} µs |")
    share_cpu = lst["n2"]["share_cpu_us"]
    total = lst["n1"]["whole_cpu_us"] + (n - 1) * (share_cpu + params["answer_us"])
    print(f"| ListTasks CPU over all bridges ({n - 1} shares × ({share_cpu:.0f} + "
          f"{params['answer_us']:.0f} µs) + {lst['n1']['whole_cpu_us']:.0f}) | {total / 1e3:.1f} ms |")
    p50, p99 = fan_out_figures(params, n, args.cores, False, 20000, rng, lst["n2"]["share_us"])
    print(f"| ListTasks fan-out latency p50 / p99 (max of {n - 1} shares, N = 2's share "
          f"distribution; answers merged on one thread) | {p50 / 1e3:.1f} / {p99 / 1e3:.1f} ms |")
    print()
    print(f"Unavailability after simultaneous failures ({args.trials} random sets each; a "
          f"partition of {per_partition:,.0f} tasks held ready in "
          f"{params['hold_cpu'][0] + params['hold_cpu'][1] * per_partition:.2f} s of a core, "
          f"the measured fit):\n")
    print("| failed | detection | partitions unavailable (mean) | of which owner and successor "
          "both failed (static map: until one restarts) | p50 s | p99 s | max s | "
          "partition-seconds lost |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for failed in (1, 5, 33):
        for label, detect in (("refused (process killed)", 0.0),
                              (f"forward timeout (host lost, {FORWARD_TIMEOUT_S:.0f} s)", FORWARD_TIMEOUT_S)):
            waits, affected, orphans = unavailability(
                params, n, parts, tasks, failed, args.cores, args.trials, rng, detect)
            print(f"| {failed} | {label} | {affected:.0f} | {orphans:.1f} | {quantile(waits, 0.5):.1f} | "
                  f"{quantile(waits, 0.99):.1f} | {max(waits):.1f} | "
                  f"{sum(waits) / args.trials:,.0f} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calibration", help="the scale bench's JSON (SCALE_JSON)")
    ap.add_argument("--keep", action="store_true",
                    help="write --calibration, reduced, to scale_calibration.json (the default)")
    ap.add_argument("--bridges", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=1024)
    ap.add_argument("--tasks", type=float, default=1e9)
    ap.add_argument("--write-rate", type=float, default=10_000, help="new tasks a second, all bridges")
    ap.add_argument("--cores", type=int, default=2, help="cores a bridge (and this machine's, for the validation)")
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    with open(args.calibration or KEPT) as f:
        run = json.load(f)
    if args.keep:
        with open(KEPT, "w") as f:
            json.dump(reduce(run), f, indent=1)
            f.write("\n")
    params = calibrate(run)
    lst = params["list"]
    # The asking member's work for each answer: what a fan-out costs beyond the shares and
    # one member's own listing, from N = 2 (one answer); the client's part of a request: its
    # latency at N = 1 beyond the member's CPU.
    params["answer_us"] = max(0.0, lst["n2"]["whole_cpu_us"] - lst["n2"]["share_cpu_us"]
                              - lst["n1"]["whole_cpu_us"])
    params["client_us"] = max(0.0, quantile(lst["n1"]["whole_us"], 0.5) - lst["n1"]["whole_cpu_us"])
    rng = random.Random(args.seed)
    a, b = params["hold_wall"]
    ca, cb = params["hold_cpu"]
    print(f"Calibration: apply {params['apply_ns_per_record']:.0f} ns a record (replay, alone; "
          f"live, worst {params['apply_live_ns_per_record']:.0f}), {params['bytes_per_task']:.0f} B a task, "
          f"hold to ready {a * 1e3:.2f} ms + {b * 1e6:.2f} µs a task (CPU {ca * 1e3:.2f} ms + "
          f"{cb * 1e6:.2f} µs), a forwarded GetTask +{FORWARD_CPU_US} µs, a fan-out answer "
          f"{params['answer_us']:.0f} µs on the asking member, the client's part of a request "
          f"{params['client_us']:.0f} µs\n")
    validate(params, args, rng)
    extrapolate(params, args, rng)


def reduce(run):
    """The run with each latency distribution as its 201 quantiles (0, 0.5%, ..., 100%) and
    the figures rounded: what the model reads, small enough to keep in the repository."""
    def q(values):
        return [round(quantile(values, k / 200), 1) for k in range(201)]
    out = json.loads(json.dumps(run))
    for key, entry in out["list"].items():
        if isinstance(entry, dict):
            for name in ("whole_us", "share_us"):
                if name in entry:
                    entry[name] = q(entry[name])
            for m in entry.get("moves", []):
                m["first_us"], m["then_us"] = round(m["first_us"], 1), round(m["then_us"], 1)
    return out

if __name__ == "__main__":
    main()
