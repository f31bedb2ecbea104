"""Decoding the core's column buffers and writing result files."""

import json

import numpy as np
import polars as pl
import pytest

from fabricsim import Result, loads
from fabricsim.errors import OutputError

SCENARIO = """
name: small
duration: 1ms
topology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}
traffic: [{kind: udp_cbr, src: h0, dst: h1, rate: 1Gbps}]
"""


def test_tables_are_decoded_with_dtypes_names_and_strings(core_output):
    result = Result.from_core(core_output)
    assert result.nodes.to_dict(as_series=False) == {
        "id": [0, 1, 2],
        "name": ["sw0", "h0", "h1"],
        "kind": ["switch", "host", "host"],
    }
    flows = result.flows
    assert flows.columns == ["name", "kind", "src", "dst", "class", "packets_sent", "fct_ps", "completed"]
    assert flows["name"].to_list() == ["a", "b"]
    assert flows["kind"].to_list() == ["udp_cbr", "burst"]
    assert flows["src"].to_list() == ["h0", "h1"] and flows["dst"].to_list() == ["h1", "h0"]
    assert flows.schema["src"] == pl.String
    assert flows.schema["class"] == pl.UInt8 and flows["class"].to_list() == [0, 7]
    assert flows.schema["packets_sent"] == pl.UInt64
    assert flows.schema["fct_ps"] == pl.Int64 and flows["fct_ps"].to_list() == [None, 1_000_000]
    assert flows["completed"].to_list() == [False, True]
    assert result.queues["node"].to_list() == ["sw0"] * 3
    assert result.queues.schema["port"] == pl.UInt32
    assert result.drops.to_dict(as_series=False) == {"node": ["sw0"], "reason": ["port_buffer_full"], "packets": [3]}
    assert result.links["src"].to_list() == ["h0", "sw0"]
    assert result.links["utilization"].to_list() == [0.25, 0.5]
    assert result.summary["events"] == 120


def test_names_come_from_node_names_when_the_nodes_table_has_none(core_output):
    del core_output["tables"]["nodes"]
    result = Result.from_core(core_output)
    assert result.nodes.to_dict(as_series=False) == {"id": [0, 1, 2], "name": ["sw0", "h0", "h1"]}
    assert result.flows["src"].to_list() == ["h0", "h1"]


def test_missing_tables_are_empty():
    result = Result.from_core({"summary": {}, "tables": {}})
    for frame in (result.nodes, result.flows, result.queues, result.drops, result.links):
        assert frame.shape == (0, 0)


def test_empty_columns_decode(core_output):
    core_output["tables"]["drops"] = {"node": ("u32", b""), "reason": ("u32", b""), "packets": ("u64", b"")}
    drops = Result.from_core(core_output).drops
    assert drops.height == 0 and drops.schema["node"] == pl.String and drops.schema["packets"] == pl.UInt64


def test_bad_codes_and_dtypes_are_reported(core_output):
    core_output["tables"]["links"]["src"] = ("u32", np.array([7, 0], dtype="<u4").tobytes())
    with pytest.raises(ValueError, match="column 'src': code 7 has no label"):
        Result.from_core(core_output)
    core_output["tables"]["links"]["src"] = ("u16", b"\0\0\0\0")
    with pytest.raises(ValueError, match="unknown dtype 'u16'"):
        Result.from_core(core_output)


def test_small_runs_decode_through_lists_to_the_same_columns_and_files_as_numpy(core_output, monkeypatch, tmp_path):
    """A run whose tables are small is decoded without numpy; larger ones through numpy arrays.
    Both give the same dtypes, nulls, values and Parquet bytes."""
    from fabricsim.outputs import tables

    by_list = Result.from_core(core_output)
    monkeypatch.setattr(tables, "_LIST_DECODE_BYTES", -1)
    by_numpy = Result.from_core(core_output)
    frames = {"nodes": (by_list.nodes, by_numpy.nodes)}
    frames.update({name: (frame, by_numpy.tables()[name]) for name, frame in by_list.tables().items()})
    assert list(by_list.tables()) == list(by_numpy.tables())
    assert by_list.flows["fct_ps"].to_list() == [None, 1_000_000]
    for name, (listed, arrays) in frames.items():
        assert listed.schema == arrays.schema, name
        listed.write_parquet(tmp_path / "list.parquet")
        arrays.write_parquet(tmp_path / "numpy.parquet")
        assert (tmp_path / "list.parquet").read_bytes() == (tmp_path / "numpy.parquet").read_bytes(), name


def test_a_column_of_partial_values_is_refused_by_either_decoder(core_output, monkeypatch):
    from fabricsim.outputs import tables

    core_output["tables"]["links"]["utilization"] = ("f64", b"\0" * 12)
    with pytest.raises(ValueError, match="column 'utilization': 12 bytes are no whole number of f64 values"):
        Result.from_core(core_output)
    monkeypatch.setattr(tables, "_LIST_DECODE_BYTES", -1)
    with pytest.raises(ValueError, match="column 'utilization': 12 bytes are no whole number of f64 values"):
        Result.from_core(core_output)


def test_write_produces_every_file(core_output, tmp_path):
    scenario = loads(SCENARIO)
    result = Result.from_core(core_output, scenario)
    written = result.write(tmp_path / "out" / "nested")
    names = [path.name for path in written]
    assert names == [
        "summary.json",
        "scenario.yaml",
        "nodes.parquet",
        "flows.parquet",
        "queues.parquet",
        "drops.parquet",
        "links.parquet",
        "throughput.parquet",
        "marks.parquet",
        "pools.parquet",
        "buffers.parquet",
        "queue_peaks.parquet",
        "pauses.parquet",
        "report.html",
    ]
    out = tmp_path / "out" / "nested"
    assert "<svg" in (out / "report.html").read_text() or "none" in (out / "report.html").read_text()
    assert not list(out.glob("*.tmp"))
    summary_text = (out / "summary.json").read_text()
    summary = json.loads(summary_text)
    assert list(summary) == sorted(summary)
    assert summary["latency_mean_s"] is None  # NaN is not valid JSON
    assert summary_text == json.dumps(summary, sort_keys=True, indent=2) + "\n"
    assert pl.read_parquet(out / "flows.parquet").equals(result.flows)
    assert Result.read(out).nodes.equals(result.nodes)  # a report drawn later needs them (latencies)
    assert pl.read_parquet(out / "drops.parquet")["reason"].to_list() == ["port_buffer_full"]
    assert loads((out / "scenario.yaml").read_text()).to_resolved() == scenario.to_resolved()


def test_written_files_are_byte_identical_across_writes(core_output, tmp_path):
    result = Result.from_core(core_output, loads(SCENARIO))
    first, second = result.write(tmp_path / "a"), result.write(tmp_path / "b")
    for a, b in zip(first, second):
        assert a.read_bytes() == b.read_bytes(), a.name
    again = Result.from_core(core_output, loads(SCENARIO)).write(tmp_path / "c")
    for a, c in zip(first, again):
        assert a.read_bytes() == c.read_bytes(), a.name


def test_a_failed_write_does_not_stop_the_others(core_output, tmp_path):
    (tmp_path / "summary.json").write_text("{}")  # a previous run's directory
    (tmp_path / "queues.parquet").mkdir()  # cannot be replaced by a file
    with pytest.raises(OutputError) as info:
        Result.from_core(core_output).write(tmp_path)
    error = info.value
    assert [path for path, _ in error.failures] == [str(tmp_path / "queues.parquet")]
    assert "cannot write" in str(error) and "queues.parquet" in str(error)
    written = ["summary.json", "nodes.parquet", "flows.parquet", "drops.parquet", "links.parquet", "throughput.parquet",
               "marks.parquet", "pools.parquet", "buffers.parquet", "queue_peaks.parquet", "pauses.parquet",
               "report.html"]
    assert [path.name for path in error.written] == written
    for name in written:
        assert (tmp_path / name).is_file()
    assert not list(tmp_path.glob("*.tmp"))


def test_unusable_output_directory(core_output, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot write"):
        Result.from_core(core_output).write(blocker / "out")


def test_a_table_the_core_adds_is_decoded_exposed_written_and_read_back(core_output, tmp_path):
    core_output["tables"]["pipeline"] = {
        "node": ("u32", np.array([0, 0], dtype="<u4").tobytes()),
        "stage": ("u32", np.array([1, 0], dtype="<u4").tobytes()),
        "packets": ("u64", np.array([7, 9], dtype="<u8").tobytes()),
    }
    core_output["strings"]["pipeline.stage"] = ["parser", "egress"]
    result = Result.from_core(core_output, loads(SCENARIO))
    pipeline = result.tables()["pipeline"]
    assert pipeline.to_dict(as_series=False) == {"node": ["sw0", "sw0"], "stage": ["egress", "parser"],
                                                 "packets": [7, 9]}
    assert result.pipeline is pipeline
    assert list(result.tables())[-1] == "pipeline"  # after the known tables, in the core's order
    written = [path.name for path in result.write(tmp_path, report=False)]
    assert written[-2:] == ["pauses.parquet", "pipeline.parquet"]
    again = Result.read(tmp_path)
    assert again.pipeline.equals(pipeline) and list(again.tables()) == list(result.tables())
    with pytest.raises(AttributeError, match="no attribute or table 'telemetry'"):
        result.telemetry


def test_known_tables_are_attributes_that_can_be_replaced(core_output):
    result = Result.from_core(core_output)
    assert result.pauses.shape == (0, 0) and result.fct.shape == (0, 0)
    result.drops = result.drops.head(0)
    assert result.tables()["drops"].height == 0
    assert "fct" not in result.tables()  # derived tables are listed only when they have rows
    result.fct = pl.DataFrame({"bucket": ["all"], "count": [1]})
    assert list(result.tables())[-1] == "fct"


def test_memo_keeps_a_derived_table_while_its_inputs_and_settings_stay():
    run = Result({}, flows=pl.DataFrame({"a": [1]}))
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    flows = run.flows
    assert run.memo("k", (flows,), compute, (0, [1])) == 1
    assert run.memo("k", (flows,), compute, (0, [1])) == 1  # same objects, equal settings
    assert run.memo("k", (flows,), compute, (5, [1])) == 2  # other settings
    run.flows = pl.DataFrame({"a": [1]})  # an equal table, but another object
    assert run.memo("k", (run.flows,), compute, (5, [1])) == 3
    assert run.memo("other", (run.flows,), compute) == 4 and run.memo("k", (run.flows,), compute, (5, [1])) == 3


def test_tables_include_the_nodes_and_read_gives_them_back(core, tmp_path):
    import fabricsim

    sc = fabricsim.loads(
        "name: t\nduration: 100us\ntopology: {kind: star, hosts: 2, link: {rate: 10Gbps, delay: 1us}}\n"
        "traffic: [{kind: udp_cbr, src: h1, dst: h0, rate: 1Gbps}]\n")
    result = fabricsim.run(sc)
    tables = result.tables()
    assert list(tables)[0] == "nodes" and tables["nodes"]["name"].to_list() == result.nodes["name"].to_list()
    result.write(tmp_path / "r", report=False)
    again = fabricsim.Result.read(tmp_path / "r")
    assert set(again.tables()) == set(tables)
    assert again.tables()["nodes"].equals(tables["nodes"])


def test_small_and_large_columns_decode_alike(monkeypatch):
    """Columns up to ``_SMALL`` rows are decoded in Python, longer ones by polars: the same frames."""
    from fabricsim.outputs import tables

    codes = np.array([2, 0, 1, 2, 1], dtype="<u4")
    values = np.array([5, -1, 7, -1, 0], dtype="<i8")
    plain = np.array([5, 6, 7, 8, 9], dtype="<i8")
    columns = {"node": ("u32", codes.tobytes()), "fct_ps": ("i64", values.tobytes()),
               "end_ps": ("i64", plain.tobytes()), "kind": ("u32", codes.tobytes())}
    strings = {"flows.kind": ["a", "b", "c"]}
    small = tables._decode_table("flows", columns, strings, ["h0", "h1", "h2"])
    monkeypatch.setattr(tables, "_SMALL", 0)
    large = tables._decode_table("flows", columns, strings, ["h0", "h1", "h2"])
    assert small.equals(large) and small.schema == large.schema
    assert small["node"].to_list() == ["h2", "h0", "h1", "h2", "h1"]
    assert small["fct_ps"].to_list() == [5, None, 7, None, 0] and small["fct_ps"].dtype == pl.Int64
    assert small["end_ps"].null_count() == 0
