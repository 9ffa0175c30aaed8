#!/usr/bin/env python3
# tools/bdrate.py: Bjøntegaard delta rate (BD-rate, PSNR) of rate-distortion curves from a CSV, in plain Python
"""BD-rate of every encoder against an anchor, per clip.

Input CSV (header required): clip,encoder,qp,kbps,psnr_y[,...] — one row per encoded point.

BD-rate (VCEG-M33, Bjøntegaard 2001): log10(rate) is fitted as a function of PSNR for both
curves, each fit is integrated over the PSNR interval the two curves share, and the mean
difference d of log10(rate) gives BD-rate = (10^d - 1) * 100 %. Negative: the encoder needs
fewer bits than the anchor for the same PSNR.

  --fit pchip   piecewise cubic Hermite interpolation (Fritsch-Carlson monotone slopes), the
                variant of the later VCEG/JVET reports (default);
  --fit cubic   the classic least-squares polynomial of degree 3 (degree n-1 below 4 points).

With two points per curve both fits are the straight line through them.

  tools/bdrate.py results.csv --anchor x264-veryfast
  tools/bdrate.py results.csv --anchor x264-veryfast --plot rd.png
  tools/bdrate.py results.csv --anchor x264-veryfast --test cudah264enc --max 5
      (exit status 1 if any clip's BD-rate of cudah264enc exceeds +5 %)
"""
import argparse
import csv
import math
import sys
from collections import OrderedDict


def _solve(a, b):
    """Gaussian elimination with partial pivoting; a is n x n, b length n."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[p][c]) < 1e-300:
            raise ValueError("singular fit (repeated PSNR values?)")
        m[c], m[p] = m[p], m[c]
        for r in range(c + 1, n):
            f = m[r][c] / m[c][c]
            for k in range(c, n + 1):
                m[r][k] -= f * m[c][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][k] * x[k] for k in range(r + 1, n))) / m[r][r]
    return x


def polyfit(xs, ys, deg):
    """Least-squares coefficients c[0] + c[1] x + ... + c[deg] x^deg."""
    a = [[sum(x ** (i + j) for x in xs) for j in range(deg + 1)] for i in range(deg + 1)]
    b = [sum(y * x ** i for x, y in zip(xs, ys)) for i in range(deg + 1)]
    return _solve(a, b)


def poly_integral(c, lo, hi):
    prim = lambda x: sum(ck * x ** (k + 1) / (k + 1) for k, ck in enumerate(c))
    return prim(hi) - prim(lo)


def pchip_slopes(xs, ys):
    """Fritsch-Carlson slopes, as in SciPy's PchipInterpolator (three-point ends)."""
    n = len(xs)
    h = [xs[i + 1] - xs[i] for i in range(n - 1)]
    d = [(ys[i + 1] - ys[i]) / h[i] for i in range(n - 1)]
    if n == 2:
        return [d[0], d[0]]
    m = [0.0] * n
    for i in range(1, n - 1):
        if d[i - 1] * d[i] <= 0:
            m[i] = 0.0
        else:
            w1, w2 = 2 * h[i] + h[i - 1], h[i] + 2 * h[i - 1]
            m[i] = (w1 + w2) / (w1 / d[i - 1] + w2 / d[i])

    def end(h0, h1, d0, d1):
        s = ((2 * h0 + h1) * d0 - h0 * d1) / (h0 + h1)
        if s * d0 <= 0:
            return 0.0
        if d0 * d1 <= 0 and abs(s) > abs(3 * d0):
            return 3 * d0
        return s

    m[0] = end(h[0], h[1], d[0], d[1])
    m[-1] = end(h[-1], h[-2], d[-1], d[-2])
    return m


def pchip_integral(xs, ys, lo, hi):
    """Integral over [lo, hi] of the PCHIP interpolant (hi, lo inside [xs[0], xs[-1]])."""
    m = pchip_slopes(xs, ys)
    total = 0.0
    for i in range(len(xs) - 1):
        a, b = max(lo, xs[i]), min(hi, xs[i + 1])
        if a >= b:
            continue
        hseg = xs[i + 1] - xs[i]
        # Hermite basis integrated in t = (x - x_i) / h from ta to tb.
        def prim(t):
            h00 = t ** 4 / 2 - t ** 3 + t
            h10 = t ** 4 / 4 - 2 * t ** 3 / 3 + t ** 2 / 2
            h01 = -t ** 4 / 2 + t ** 3
            h11 = t ** 4 / 4 - t ** 3 / 3
            return (h00 * ys[i] + h10 * hseg * m[i] + h01 * ys[i + 1] + h11 * hseg * m[i + 1])
        ta, tb = (a - xs[i]) / hseg, (b - xs[i]) / hseg
        total += (prim(tb) - prim(ta)) * hseg
    return total


def bd_rate(anchor, test, fit="pchip"):
    """anchor, test: lists of (kbps, psnr). Returns BD-rate in percent, or None without overlap."""
    curves = []
    for pts in (anchor, test):
        pts = sorted(pts, key=lambda p: p[1])
        if len(pts) < 2:
            raise ValueError("a curve needs at least two points")
        curves.append(([p[1] for p in pts], [math.log10(p[0]) for p in pts]))
    lo = max(c[0][0] for c in curves)
    hi = min(c[0][-1] for c in curves)
    if hi <= lo:
        return None
    areas = []
    for xs, ys in curves:
        if fit == "cubic":
            areas.append(poly_integral(polyfit(xs, ys, min(3, len(xs) - 1)), lo, hi))
        else:
            areas.append(pchip_integral(xs, ys, lo, hi))
    return (10 ** ((areas[1] - areas[0]) / (hi - lo)) - 1) * 100


def load(path):
    data = OrderedDict()  # clip -> encoder -> [(kbps, psnr, qp)]
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            data.setdefault(row["clip"], OrderedDict()).setdefault(row["encoder"], []).append(
                (float(row["kbps"]), float(row["psnr_y"]), row["qp"]))
    return data


def plot(data, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    clips = list(data)
    fig, axes = plt.subplots(1, len(clips), figsize=(5 * len(clips), 4.2), squeeze=False)
    for ax, clip in zip(axes[0], clips):
        for enc, pts in data[clip].items():
            pts = sorted(pts)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=enc)
        ax.set_xscale("log")
        ax.set_title(clip)
        ax.set_xlabel("bitrate (kbit/s, log scale)")
        ax.set_ylabel("Y-PSNR (dB)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--anchor", required=True, help="encoder name of the reference curve")
    ap.add_argument("--fit", choices=("pchip", "cubic"), default="pchip")
    ap.add_argument("--plot", help="write a rate-distortion plot (PNG; needs matplotlib)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--test", help="encoder whose BD-rate is checked against --max")
    ap.add_argument("--max", type=float, help="largest BD-rate (%%) --test may have on any clip")
    args = ap.parse_args()

    data = load(args.csv)
    encoders = []
    for per in data.values():
        encoders += [e for e in per if e not in encoders and e != args.anchor]
    header = ["clip"] + encoders
    rows, worst = [], {}
    for clip, per in data.items():
        if args.anchor not in per:
            sys.exit(f"bdrate.py: clip {clip} has no {args.anchor} curve")
        row = [clip]
        for enc in encoders:
            if enc not in per:
                row.append("-")
                continue
            v = bd_rate([p[:2] for p in per[args.anchor]], [p[:2] for p in per[enc]], args.fit)
            row.append("no overlap" if v is None else f"{v:+.1f} %")
            if v is not None:
                worst[enc] = max(worst.get(enc, -1e9), v)
            worst.setdefault(enc + "/sum", []).append(v)
        rows.append(row)
    mean = ["mean"]
    for enc in encoders:
        vals = [v for v in worst[enc + "/sum"] if v is not None]
        mean.append(f"{sum(vals) / len(vals):+.1f} %" if vals else "-")
    rows.append(mean)

    print(f"BD-rate (Y-PSNR, {args.fit} fit) against {args.anchor}; negative = fewer bits")
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))
    if args.plot:
        plot(data, args.plot)
        print(f"bdrate.py: rate-distortion plot: {args.plot}")
    if args.test:
        if args.max is None:
            sys.exit("bdrate.py: --test needs --max")
        if args.test not in worst or any(v is None for v in worst[args.test + "/sum"]):
            sys.exit(f"bdrate.py: no BD-rate for {args.test} on every clip")
        if worst[args.test] > args.max:
            print(f"bdrate.py: FAIL: {args.test} BD-rate {worst[args.test]:+.2f} % > {args.max:+.2f} %")
            return 1
        print(f"bdrate.py: ok: {args.test} BD-rate {worst[args.test]:+.2f} % <= {args.max:+.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
