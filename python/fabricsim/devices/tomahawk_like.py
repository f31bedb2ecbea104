"""Broadcom Tomahawk-like switch: a 16 MB buffer split into four slices.

Public facts: Tomahawk (BCM56960) has 4 XPEs of 20,165 cells of 208 B (about
4 MB each, 16 MB in all); the buffer is partitioned per XPE, so one hot egress
port can use only its slice (OpenBCM ``_TH_MMU_*`` constants; Warner's buffer
notes). Assumptions: each egress port belongs to one slice (ports split into
four equal blocks), which leaves out the ingress-pipe half of the XPE mapping;
alpha 8 as in SONiC's lossy defaults; 450 ns pipeline latency (commonly quoted,
unverified).
"""

NAME = "tomahawk-like"
SUMMARY = "shared buffer, 16 MB in 4 per-slice pools of 20,165 cells of 208 B, alpha 8, 450 ns"
SWITCH = {
    "latency": "450ns",
    "buffer": {"model": "shared", "size": "16777280B", "cell": "208B", "alpha": 8, "slices": 4},
}
