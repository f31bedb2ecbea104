"""Scenario texts shared by several test modules (not collected: no ``test_`` prefix)."""

#: Two hosts on a star, one CBR flow, 1 ms: the smallest run that exercises
#: the whole path from YAML to results.
SMALL_STAR = """
name: small
seed: 5
duration: 1ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
"""
