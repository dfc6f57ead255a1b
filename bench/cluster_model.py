# bench/cluster's model check (--model): the link classes measured with
# tutti-perf in the namespaces (inter: host0 and host1 at the rate;
# intra: two tasks on one host), tutti-tune --model's predictions from
# them, and the predicted-vs-measured table (model.md) with its
# machine-readable form (model.tsv).

from cluster_util import (SELECTION, WARMUP, fmt_size, host_cpus, note,
                          rate_name, sh)
from cluster_jobs import parse_rows


def measure_links(jobs, args, rate, classes):
    """Link classes for the model: inter (host0, host1, 1 task each) at
    this rate and, once, intra (2 tasks on host0, on the CPUs a host has
    in the largest cell); {name: (us, GB/s)}: allreduce, the time at 8 B
    and the busbw at the largest size up to 16M."""
    big = max(8, min(args.maxbytes, 16 << 20))
    argv = ["-c", "allreduce", "-b", "8", "-e", str(big), "-f",
            "%d" % max(2, big // 8), "-n", str(args.iters), "-w", str(WARMUP)]
    todo = [("inter", 2, 1, 2)]
    if "intra" not in classes:
        todo.append(("intra", 1, 2, max(args.hosts)))
    for name, hosts, per_host, cpu_hosts in todo:
        tag = "links-%s-r%s" % (name, rate_name(rate))
        limit = jobs.job_timeout(hosts, per_host, rate, [8, big], args.iters)
        st, out, why = jobs.run_tutti(hosts, per_host, argv, tag, limit,
                                      cpu_hosts)
        rows = parse_rows(out)
        if st != 0 or len(rows) < 2:
            note("link class %s: measurement failed: %s" % (name, why))
            continue
        lat, bw = rows[0][1], rows[-1][2]
        classes[name] = (lat, bw)
        cpus = host_cpus(0, cpu_hosts)
        note("link class %s%s: %.2f us at 8 B (%s), %.3f GB/s busbw at %s "
             "(%s); 2 tasks on %s" % (
                 name, "" if name == "intra" else " at " + rate_name(rate) +
                 " Gbit/s", lat, rows[0][4], bw, fmt_size(rows[-1][0]),
                 rows[-1][4], "hosts 0 and 1" if name == "inter" else
                 "host0, CPUs " + (",".join(map(str, cpus)) if cpus else
                                   "all")))
    return classes


def model_has(tune):
    if tune is None:
        return False
    rc, out = sh([tune, "--help"], check=False)
    return "--model" in out


def predict(tune, hosts, per_host, classes, coll, args):
    """{(nominal size, impl): us} and {nominal size: best impl}."""
    cmd = [tune, "--model", "--hosts", str(hosts), "--per-host",
           str(per_host), "--intra", "%g,%g" % classes["intra"],
           "--inter", "%g,%g" % classes["inter"], "-c", coll,
           "-b", str(args.minbytes), "-e", str(args.maxbytes),
           "-f", "%g" % args.stepfactor]
    rc, out = sh(cmd, check=False, timeout=60)
    pred, best = {}, {}
    for line in out.splitlines():
        w = line.split()
        if len(w) == 5 and w[0] == "model" and w[1] == coll:
            try:
                pred[(int(w[2]), w[3])] = float(w[4])
            except ValueError:
                pass
        elif len(w) == 4 and w[0] == "best" and w[1] == coll:
            best[int(w[2])] = w[3]
    if rc != 0 or not pred:
        note("tutti-tune --model (%s) exited %d: %s"
             % (" ".join(cmd[1:]), rc, out.strip()[-300:]))
    return pred, best


def model_rows(args, algs, med, predictions):
    """(hosts, per_host, rate, coll, bytes, label, predicted us, measured
    us) of every implementation measured and predicted; @med: the
    medians over rounds (bench/cluster's medians())."""
    for (hosts, per_host, rate, coll), (pred, best) in predictions.items():
        for idx, nominal in enumerate(args.sizes):
            for alg in algs[coll]:
                m = med.get((hosts, per_host, rate, coll, alg, idx))
                if m is None:
                    continue
                name, label = alg, alg
                if alg == SELECTION:
                    if nominal not in best:
                        continue
                    name = best[nominal]
                    label = "(selection) [model: %s]" % name
                us = pred.get((nominal, name))
                if us is None:
                    us = pred.get((m[0], name))
                if us is None:
                    continue
                yield hosts, per_host, rate, coll, m[0], label, us, m[1]


def model_table(args, algs, med, predictions):
    lines = ["| hosts | per host | Gbit/s | collective | bytes | algorithm | "
             "predicted_us | measured_us | measured/predicted |",
             "|---:|---:|---:|---|---:|---|---:|---:|---:|"]
    for hosts, per_host, rate, coll, nbytes, label, us, meas in \
            model_rows(args, algs, med, predictions):
        lines.append("| %d | %d | %s | %s | %d | %s | %.2f | %.2f | %s |"
                     % (hosts, per_host, rate_name(rate), coll, nbytes,
                        label, us, meas,
                        "%.2f" % (meas / us) if us > 0 else "-"))
    return "\n".join(lines)


def model_tsv(path, args, algs, med, predictions):
    """The rows of model_table() as tab-separated values in @path."""
    with open(path, "w") as f:
        f.write("hosts\tper_host\trate\tcollective\tbytes\talgorithm\t"
                "predicted_us\tmeasured_us\n")
        for hosts, per_host, rate, coll, nbytes, label, us, meas in \
                model_rows(args, algs, med, predictions):
            f.write("%d\t%d\t%s\t%s\t%d\t%s\t%.3f\t%.3f\n"
                    % (hosts, per_host, rate_name(rate), coll, nbytes, label,
                       us, meas))
