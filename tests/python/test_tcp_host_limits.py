"""The Linux sender's host limits in the scenario schema: profile defaults,
socket buffers set by the application, and bad input named by field."""

from __future__ import annotations

import pytest

from fabricsim import ScenarioError, from_dict
from fabricsim.schema.transports import Tcp


def test_linux_profile_has_tso_sizing_tsq_and_autotuned_buffers_rfc_has_none() -> None:
    t = Tcp()
    assert (t.gso_max_size, t.tsq, t.rcv_autotune, t.pacing) == (65_536, True, True, "off")
    assert t.wmem == [4096, 16_384, 4_194_304] and t.rmem == [4096, 131_072, 6_291_456]
    r = Tcp(profile="rfc")
    assert (r.gso_max_size, r.tsq, r.rcv_autotune, r.wmem) == (0, False, False, None)
    assert r.rwnd == 6 * 1024 * 1024


def test_a_fixed_window_or_send_buffer_turns_autotuning_off() -> None:
    assert Tcp(rwnd="512MB").rcv_autotune is False
    assert Tcp(sndbuf="512MB").wmem is None
    assert Tcp(wmem=None).wmem is None


def test_a_pacing_rate_alone_means_linux_pacing_capped_by_it_or_a_fixed_rate_in_rfc() -> None:
    assert Tcp(pacing_rate="1Gbps").pacing == "internal"
    assert Tcp(profile="rfc", pacing_rate="1Gbps").pacing == "fixed"
    assert Tcp(gso_max_size="0B").gso_max_size == 0


@pytest.mark.parametrize(
    ("fields", "path", "words"),
    [
        ({"pacing": "fixed"}, "pacing", "needs a pacing_rate"),
        ({"pacing": "bbr"}, "pacing", "fixed"),
        ({"rmem": ["4KB", "1MB", "128KB"]}, "rmem", "min <= default <= max"),
        ({"wmem": ["4KB", "16KB"]}, "wmem", "three sizes"),
        ({"rcv_scaling_ratio": "150%"}, "rcv_scaling_ratio", "between 0% and 100%"),
        ({"min_tso_segs": 0}, "min_tso_segs", ""),
    ],
)
def test_bad_host_limit_fields_are_errors_naming_the_field(fields: dict, path: str, words: str) -> None:
    scenario = {
        "topology": {"kind": "star", "hosts": 2, "link": {"rate": "10Gbps"}},
        "tcp": fields,
        "traffic": [{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "size": "1MB"}],
    }
    with pytest.raises(ScenarioError) as info:
        from_dict(scenario)
    text = str(info.value)
    assert f"tcp.{path}" in text and words in text, text
