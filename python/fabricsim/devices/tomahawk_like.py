"""Broadcom Tomahawk-like switch: a 16 MB buffer split into four slices, four pipes.

Public facts: Tomahawk (BCM56960) has 4 XPEs of 20,165 cells of 208 B (about
4 MB each, 16 MB in all); the buffer is partitioned per XPE, so one hot egress
port can use only its slice (OpenBCM ``_TH_MMU_*`` constants; Warner's buffer
notes). Four packet-processing pipes of 8 port blocks each
(``_TH_PIPES_PER_DEV 4``, ``_TH_PBLKS_PER_PIPE 8``: 8 x 100G per pipe); core
clock 850 MHz (``TH_FREQ_850`` in OpenBCM's streaming test library).
Assumptions: each egress port belongs to one slice (ports split into four
equal blocks), which leaves out the ingress-pipe half of the XPE mapping;
alpha 8 as in SONiC's lossy defaults; 450 ns pipeline latency (commonly
quoted, unverified); each pipe processes one packet per clock (850 M
packets/s, below the 1,190 M/s of 8 x 100G at 64 B: the forwarding path,
features included, runs below line rate for frames under 98 B); features cost
no extra pass (no public number); an egress port serves the ingress pipes in
turn, then the ports of a pipe in turn (hierarchical arbitration by pipe).
"""

NAME = "tomahawk-like"
SUMMARY = (
    "shared buffer, 16 MB in 4 per-slice pools of 20,165 cells of 208 B, alpha 8, 450 ns; "
    "4 pipes of 850 Mpps (below line rate under 98 B), hierarchical arbitration by pipe"
)
SWITCH = {
    "latency": "450ns",
    "buffer": {"model": "shared", "size": "16777280B", "cell": "208B", "alpha": 8, "slices": 4},
    "pipeline": {"pipes": 4, "rate": "850Mpps"},
    "arbitration": {"kind": "hierarchical"},
}
