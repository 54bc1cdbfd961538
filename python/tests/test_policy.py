"""mocc.Policy, Controller and PacketController: the Rust runtime, bit for bit."""

import csv
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scenarios import AURORA, AURORA_EXPORT, MOCC, MOCC_EXPORT, PAIR_EXPORT, REPO

import mocc


def mocc_binary() -> Path:
    """The command line `make test` built (MOCC_BIN), else the newest one in target/."""
    if os.environ.get("MOCC_BIN"):
        return Path(os.environ["MOCC_BIN"])
    for profile in ("ci", "release"):
        path = REPO / "target" / profile / "mocc"
        if path.exists():
            return path
    pytest.skip("no mocc binary (cargo build --profile ci); make test sets MOCC_BIN")


def test_exports_load_with_their_facts():
    aurora = mocc.Policy.load(AURORA_EXPORT)
    assert aurora.obs_len == 30 and not aurora.takes_objective and not aurora.paired
    assert aurora.features == ["sent latency inflation", "latency ratio", "send ratio"]
    m = mocc.Policy.load(MOCC_EXPORT)
    assert m.takes_objective and m.history_len * len(m.features) == m.obs_len
    assert mocc.Policy.load(PAIR_EXPORT).paired
    with pytest.raises(mocc.PolicyError, match="no-such-export"):
        mocc.Policy.load(REPO / "no-such-export")


def test_act_takes_rows_batches_and_embedded_objectives():
    p = mocc.Policy.load(MOCC_EXPORT)
    env = mocc.make_vec(MOCC, 4, objective="random", seed=1)
    obs, _ = env.reset()
    for _ in range(5):
        obs, *_ = env.step(np.zeros(4))
    batch = p.act(obs)
    assert batch.shape == (4,) and batch.dtype == np.float32
    for i in range(4):
        history, w = obs[i, : p.obs_len], obs[i, p.obs_len :]
        assert p.act(obs[i]) == batch[i]
        assert p.act(history, w.astype(np.float64)) == batch[i]
    # The objective matters, and a wrong width is refused.
    assert p.act(obs[0, :30], np.array([0.8, 0.1, 0.1])) != p.act(obs[0, :30], np.array([0.1, 0.8, 0.1]))
    with pytest.raises(ValueError, match="obs"):
        p.act(np.zeros(7, dtype=np.float32))
    with pytest.raises(ValueError, match="objective"):
        p.act(obs[0, :30], np.array([1.0, 1.0, 1.0]))


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize(
    "scenario,export,objective",
    [(AURORA, AURORA_EXPORT, None), (MOCC, MOCC_EXPORT, [0.6, 0.3, 0.1])],
)
def test_python_closed_loop_is_mocc_simulate_bit_for_bit(tmp_path, scenario, export, objective):
    """The env driven from Python by Policy.act gives the very MIs `mocc simulate --policy`
    records (the same Env and the same policy code in Rust): every value equal as parsed."""
    steps, seed = 150, 4
    out = tmp_path / "rows.csv"
    cmd = [str(mocc_binary()), "simulate", "--scenario", str(scenario), "--policy", str(export),
           "--steps", str(steps), "--seed", str(seed), "--out", str(out)]
    if objective:
        cmd += ["--objective", ",".join(map(str, objective))]
    subprocess.run(cmd, check=True, capture_output=True)
    rows = read_rows(out)
    assert len(rows) == steps
    policy = mocc.Policy.load(export)
    env = mocc.make(scenario, episode_mis=10**6, objective=objective)
    obs, _ = env.reset(seed=seed)
    for k, row in enumerate(rows):
        obs, reward, _, _, info = env.step(np.float32([policy.act(obs)]))
        assert float(row["time_s"]) == info["time_s"], k
        assert float(row["send_pps"]) == info["send_pps"], k
        assert float(row["thr_pps"]) == info["metric_thr_pps"], k  # Aurora's recv rate
        # An MI without RTT samples has an empty cell (the env's info says 0).
        assert (float(row["mean_rtt_s"]) if row["mean_rtt_s"] else 0.0) == info["mean_rtt_s"], k
        assert float(row["reward"]) == reward, k


def test_controller_decides_with_the_policy_on_its_own_observation():
    p = mocc.Policy.load(MOCC_EXPORT)
    w = [0.2, 0.7, 0.1]
    c = mocc.Controller(p, w)
    rate = c.start(200.0, 0.02)
    assert rate == 200.0 and c.last_action is None
    t, rates = 0.0, []
    for k in range(40):
        dur = c.mi_duration_s
        sent = rate * dur * 1500
        rtts = [0.04 + 0.0005 * (k % 7) + 0.0001 * j for j in range(8)]
        rate = c.on_monitor_interval(sent, 0.97 * sent, 0.03 * sent, t, t + dur, rtt_samples=rtts)
        t += dur
        rates.append(rate)
        if c.last_action is not None:
            assert c.last_action == p.act(c.observation(), np.asarray(w))
    assert c.last_action is not None and len(set(rates)) > 10
    # The summary form of the RTTs is the same MI.
    d = mocc.Controller(p, w)
    d.start(200.0, 0.02)
    e = mocc.Controller(p, w)
    e.start(200.0, 0.02)
    samples = [0.05, 0.06, 0.07]
    assert d.on_monitor_interval(3e4, 3e4, 0, 0, 0.1, rtt_samples=samples) == e.on_monitor_interval(
        3e4, 3e4, 0, 0, 0.1, rtt=(3, np.mean(samples), 0.05, 0.065)
    )
    with pytest.raises(ValueError, match="sum to 1"):
        c.set_objective([0.5, 0.5, 0.5])


def test_packet_controller_cuts_mis_as_a_controller_fed_them():
    """Packet events through PacketController close MIs whose statistics, fed to a plain
    Controller, give the same rates."""
    p = mocc.Policy.load(AURORA_EXPORT)
    pc = mocc.PacketController(p, 150.0)
    c = mocc.Controller(p)
    rate = pc.start(0.0, 0.03)
    assert rate == c.start(150.0, 0.03)
    t, closed, rng = 0.0, 0, np.random.default_rng(3)
    in_flight = []
    while closed < 60:
        t += 1.0 / pc.rate_pps
        mis = [pc.on_sent(t)]
        in_flight.append(t)
        while in_flight and in_flight[0] + 0.06 <= t:
            sent_at = in_flight.pop(0)
            if rng.random() < 0.02:
                mis.append(pc.on_lost(t))
            else:
                mis.append(pc.on_acked(t, t - sent_at))
        for mi in filter(None, mis):
            closed += 1
            fields = {k: mi[k] for k in ("bytes_sent", "bytes_acked", "bytes_lost", "send_start_s",
                                         "send_end_s", "recv_start_s", "recv_end_s", "rtt")}
            assert c.on_monitor_interval(**fields) == mi["next_rate_pps"]
            assert pc.rate_pps == mi["next_rate_pps"]
            assert mi["app_limit"] == "not"
    assert pc.last_action is not None


def test_packet_controller_holds_the_rate_while_the_application_limits_it():
    """After a send that leaves the application out of data, every MI is application-limited
    and none lowers the rate, though its RTT samples triple."""
    p = mocc.Policy.load(AURORA_EXPORT)
    pc = mocc.PacketController(p, 150.0)
    pc.start(0.0, 0.03)
    t, mis = 0.0, []
    for k in range(300):
        t += 1.0 / pc.rate_pps
        mis.append(pc.on_sent(t, app_limited=(k == 299)))
        mis.append(pc.on_acked(t, 0.06))
    limited = []
    while len(limited) < 10:
        t += 0.005
        mi = pc.on_acked(t, 0.18)
        if mi is not None:
            limited.append(mi)
    # The first may hold the flagged send with data waiting before it; then out of data.
    assert limited[0]["app_limit"] in ("partly", "wholly")
    assert all(mi["app_limit"] == "wholly" for mi in limited[1:])
    assert all(mi["next_rate_pps"] >= mi["rate_pps"] for mi in limited)
