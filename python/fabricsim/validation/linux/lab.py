"""The :class:`Lab`: a topology built in network namespaces, the traffic run in it (iperf3,
sized transfers, sockperf) and the counters collected around each run."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any, Iterator, Mapping, Optional, Sequence

from fabricsim.errors import unknown_value
from fabricsim.validation import sched_trace
from fabricsim.validation.linux.jobs import Iperf3Job, TrafficRun, Transfer
from fabricsim.validation.linux.namespaces import _create_namespace, _delete_namespace, _namespaces, sweep_stale
from fabricsim.validation.linux.parsers import (
    FlowRecord,
    LatencyRecord,
    LinkCounters,
    QdiscStats,
    parse_iperf3,
    parse_ip_link,
    parse_nstat,
    parse_ss_memory,
    parse_sockperf,
    parse_tc_qdiscs,
)
from fabricsim.validation.linux.probes import (
    CC_SYSCTL,
    _cmd,
    _ProcessWatch,
    _require,
    congestion_control_allowed,
    cpu_snapshot,
    load_average,
    qdisc_available,
    softnet_drops,
)
from fabricsim.validation.linux.topology import (
    CONGESTION_CONTROLS,
    CONNTRACK_RULES,
    ETH_HEADER,
    PREFIX,
    VXLAN_PORT,
    Egress,
    LabError,
    Topology,
    Tunnel,
    _issue,
    _red_args,
    link_addresses,
    tunnel_addresses,
)

_IPERF_BASE_PORT = 5201
_TRANSFER_BASE_PORT = 6201
_TRANSFER_LEAD_S = 1.0


class Lab:
    """A topology built in network namespaces; use as a context manager (deleted on exit, errors included).

    ``Lab(topology).build()`` / ``.close()`` can also be called directly.
    ``nice`` runs the traffic processes (:meth:`spawn`) at that scheduling
    niceness; a negative one (a higher priority) lets a measurement hold its
    own against other users of a shared machine.
    """

    def __init__(self, topology: Topology, prefix: Optional[str] = None, nice: int = 0) -> None:
        self.topology = topology
        self.nice = nice
        self.prefix = prefix or f"{PREFIX}-{os.getpid()}-{secrets.token_hex(2)}"
        self._created: list[str] = []
        self._processes: list[subprocess.Popen[str]] = []
        self._devices: dict[tuple[str, str], str] = {}
        self._addresses: dict[str, str] = {}
        self._tunnel_addresses: dict[str, str] = {}
        self._previous_sigterm: Any = None
        self._socket_nodes: tuple[str, ...] = ()
        self._socket_samples: list[tuple[float, str, Any]] = []

    # ---- naming

    def ns(self, node: str) -> str:
        """Namespace of ``node``."""
        if node not in self.topology.nodes:
            raise LabError(f"unknown node {node!r}; nodes: {', '.join(self.topology.nodes)}")
        return f"{self.prefix}-{node}"

    def device(self, node: str, peer: str) -> str:
        """Name, inside ``node``'s namespace, of the veth towards ``peer``."""
        try:
            return self._devices[(node, peer)]
        except KeyError:
            raise LabError(f"no link from {node} to {peer}") from None

    def device_table(self) -> dict[str, dict[str, str]]:
        """node -> {peer: device} for every link end (and ``tunnelN`` -> its VXLAN device)."""
        table: dict[str, dict[str, str]] = {}
        for (node, peer), dev in sorted(self._devices.items()):
            table.setdefault(node, {})[peer] = dev
        return table

    def address(self, node: str, tunnel: bool = False) -> str:
        """``node``'s address: on its first link, or on its first tunnel."""
        table = self._tunnel_addresses if tunnel else self._addresses
        if node not in table:
            raise LabError(f"{node} has no {'tunnel' if tunnel else 'link'} address")
        return table[node]

    # ---- lifecycle

    def __enter__(self) -> "Lab":
        self.build()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def required_tools(self) -> tuple[str, ...]:
        """The tools that building this topology runs: iproute2 and sysctl always,
        ethtool (every veth gets its offloads set), ``tc`` where a link has an
        egress queue or shaper, ``nft`` where a namespace tracks connections.
        Traffic tools (iperf3, sockperf, ss, nstat) are checked when they run."""
        tools = ("ip", "sysctl", "ethtool")
        if any(link.egress for link in self.topology.links):
            tools += ("tc",)
        if self.topology.conntrack:
            tools += ("nft",)
        return tools

    def build(self) -> "Lab":
        _require(self.required_tools())
        sweep_stale()
        self._trap_sigterm()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def _trap_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupted(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt(f"signal {signum}")

        self._previous_sigterm = signal.signal(signal.SIGTERM, interrupted)

    def close(self) -> None:
        """End every process started here and delete every namespace (safe to call twice)."""
        for process in self._processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
        self._processes.clear()
        for ns in reversed(self._created):
            _delete_namespace(ns)
        self._created.clear()
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None

    def exists(self) -> bool:
        """Whether any of this lab's namespaces still exists."""
        return any(ns.startswith(self.prefix + "-") for ns in _namespaces())

    def _build(self) -> None:
        topo = self.topology
        for node in topo.nodes:
            ns = f"{self.prefix}-{node}"
            _create_namespace(ns)
            self._created.append(ns)
            self.sysctl(node, "net.ipv6.conf.all.disable_ipv6", "1")
            self.sysctl(node, "net.ipv6.conf.default.disable_ipv6", "1")
            self.sysctl(node, "net.ipv4.ip_forward", "1" if node in topo.routers else "0")
            self.sysctl(node, "net.ipv4.tcp_no_metrics_save", "1")
            with congestion_control_allowed(topo.sysctls.get(CC_SYSCTL)):
                for key, value in topo.sysctls.items():
                    self.sysctl(node, key, value)
            self.run(node, ["ip", "link", "set", "lo", "up"])
        counters: dict[str, int] = {}
        for index, link in enumerate(topo.links):
            names = []
            for node in (link.a, link.b):
                names.append(f"eth{counters.get(node, 0)}")
                counters[node] = counters.get(node, 0) + 1
            self._devices[(link.a, link.b)], self._devices[(link.b, link.a)] = names
            _cmd(
                [
                    "ip", "link", "add", names[0], "netns", self.ns(link.a), "mtu", str(link.mtu),
                    "type", "veth", "peer", "name", names[1], "netns", self.ns(link.b), "mtu", str(link.mtu),
                ]
            )  # fmt: skip
            subnet, addr_a, addr_b = link_addresses(index)
            for node, dev, addr in ((link.a, names[0], addr_a), (link.b, names[1], addr_b)):
                self.run(node, ["ip", "addr", "add", f"{addr}/24", "dev", dev])
                self._offloads_off(node, dev)
                self.run(node, ["ip", "link", "set", dev, "up"])
                self._addresses.setdefault(node, addr)
        for index, link in enumerate(topo.links):
            for node, egress in link.egress.items():
                peer = link.b if node == link.a else link.a
                self._configure_egress(node, self.device(node, peer), egress, link.mtu, f"links[{index}].egress.{node}")
        self._routes()
        for index, tunnel in enumerate(topo.tunnels):
            self._tunnel(index, tunnel)
        for node in topo.conntrack:
            self.run(node, ["nft", "-f", "-"], input_text=CONNTRACK_RULES)

    def _offloads_off(self, node: str, dev: str) -> None:
        self.run(node, ["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])
        if self.topology.steering == "flow":
            mask = format((1 << (os.cpu_count() or 1)) - 1, "x")
            # `ip netns exec` mounts the namespace's own /sys/class/net.
            self.run(node, ["sh", "-c", f"echo {mask} > /sys/class/net/{dev}/queues/rx-0/rps_cpus"])

    def _configure_egress(self, node: str, dev: str, egress: Egress, mtu: int, path: str) -> None:
        if egress.queue is not None and not qdisc_available(egress.queue):
            raise _issue(f"{path}.queue", f"this kernel has no '{egress.queue}' qdisc")
        tc = ["tc", "qdisc", "replace", "dev", dev]
        frame = mtu + ETH_HEADER
        parent = ["root"]
        if egress.rate_bps is not None:
            burst = egress.burst_bytes or max(10 * frame, egress.rate_bps // 8 // 10_000)
            if egress.shaper == "htb":
                self.run(node, tc + ["root", "handle", "1:", "htb", "default", "1"])
                self.run(
                    node,
                    ["tc", "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb"]
                    + ["rate", f"{egress.rate_bps}bit", "ceil", f"{egress.rate_bps}bit"]
                    + ["burst", str(burst), "cburst", str(burst), "quantum", str(max(frame, 1514))],
                )
            else:
                # tbf's own queue limit only matters without a child qdisc; the child holds the packets.
                self.run(
                    node,
                    tc
                    + ["root", "handle", "1:", "tbf", "rate", f"{egress.rate_bps}bit", "burst", str(burst)]
                    + ["limit", str(max(egress.limit or 0, 10 * frame) if egress.queue != "pfifo" else 1_000_000)]
                    + ["mtu", str(max(frame, 2048))],
                )
            parent = ["parent", "1:1"]
        if egress.queue is not None:
            if egress.queue == "red":
                args = _red_args(egress, mtu).split()
            else:
                args = ["limit", str(egress.limit)]
            self.run(node, tc + parent + ["handle", "10:", egress.queue] + args)

    def _routes(self) -> None:
        topo = self.topology
        for node in topo.nodes:
            # Breadth-first search from node: the first hop towards every other node.
            first_hop: dict[str, str] = {}
            queue = deque()
            for peer in topo.neighbours(node):
                first_hop[peer] = peer
                queue.append(peer)
            while queue:
                current = queue.popleft()
                for peer in topo.neighbours(current):
                    if peer != node and peer not in first_hop:
                        first_hop[peer] = first_hop[current]
                        queue.append(peer)
            for index, link in enumerate(topo.links):
                if node in (link.a, link.b):
                    continue
                subnet = link_addresses(index)[0]
                hop_a, hop_b = first_hop[link.a], first_hop[link.b]
                # The nearer end decides; ties go to end a.
                hop = hop_a if self._distance(node, link.a) <= self._distance(node, link.b) else hop_b
                self.run(node, ["ip", "route", "add", subnet, "via", self._peer_address(node, hop)])

    def _distance(self, src: str, dst: str) -> int:
        seen = {src: 0}
        queue = deque([src])
        while queue:
            current = queue.popleft()
            if current == dst:
                return seen[current]
            for peer in self.topology.neighbours(current):
                if peer not in seen:
                    seen[peer] = seen[current] + 1
                    queue.append(peer)
        return 1 << 30

    def _peer_address(self, node: str, peer: str) -> str:
        index, link = self.topology.link_between(node, peer)
        _, addr_a, addr_b = link_addresses(index)
        return addr_b if link.a == node else addr_a

    def _tunnel(self, index: int, tunnel: Tunnel) -> None:
        link_index, link = self.topology.link_between(tunnel.a, tunnel.b)
        _, under_a, under_b = link_addresses(link_index)
        subnet, inner_a, inner_b = tunnel_addresses(index)
        dev = f"vx{index}"
        for node, local, remote, inner in (
            (tunnel.a, under_a if link.a == tunnel.a else under_b, under_b if link.a == tunnel.a else under_a, inner_a),
            (tunnel.b, under_b if link.a == tunnel.a else under_a, under_a if link.a == tunnel.a else under_b, inner_b),
        ):
            underlay = self.device(node, tunnel.b if node == tunnel.a else tunnel.a)
            self.run(
                node,
                ["ip", "link", "add", dev, "type", "vxlan", "id", str(tunnel.vni), "local", local, "remote", remote]
                + ["dstport", str(VXLAN_PORT), "dev", underlay, "nolearning"],
            )
            self.run(node, ["ip", "link", "set", dev, "mtu", str(tunnel.mtu)])
            self.run(node, ["ip", "addr", "add", f"{inner}/24", "dev", dev])
            self._offloads_off(node, dev)
            self.run(node, ["ip", "link", "set", dev, "up"])
            self._tunnel_addresses.setdefault(node, inner)
            self._devices[(node, f"tunnel{index}")] = dev

    # ---- running things

    def run(
        self, node: str, argv: Sequence[str], check: bool = True, timeout: float = 60.0, input_text: Optional[str] = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in ``node``'s namespace and wait for it."""
        full = ["ip", "netns", "exec", self.ns(node), *argv]
        done = subprocess.run(full, capture_output=True, text=True, timeout=timeout, input=input_text)
        if check and done.returncode != 0:
            raise LabError(f"[{node}] {' '.join(argv)} failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
        return done

    def spawn(self, node: str, argv: Sequence[str], stdout: Any = subprocess.PIPE) -> subprocess.Popen[str]:
        """Start a command in ``node``'s namespace; it is ended by :meth:`close` if still running."""
        niced = ["nice", "-n", str(self.nice), *argv] if self.nice else list(argv)
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(node), *niced],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._processes.append(process)
        return process

    def sysctl(self, node: str, key: str, value: str) -> None:
        self.run(node, ["sysctl", "-q", "-w", f"{key}={value}"])

    def qdiscs(self, node: str, dev: Optional[str] = None) -> list[QdiscStats]:
        """Counters of every qdisc in ``node`` (or on one device)."""
        argv = ["tc", "-s", "-j", "qdisc", "show"] + (["dev", dev] if dev else [])
        return parse_tc_qdiscs(self.run(node, argv).stdout, node=node, dev=dev or "")

    def link_counters(self, node: str) -> dict[str, LinkCounters]:
        return parse_ip_link(self.run(node, ["ip", "-s", "-j", "link", "show"]).stdout)

    def nstat(self, node: str) -> dict[str, int]:
        """Absolute SNMP/TcpExt counters of ``node``'s namespace (nstat -a -s -z)."""
        return parse_nstat(self.run(node, ["nstat", "-a", "-s", "-z", "-j"]).stdout)

    def ss(self, node: str) -> str:
        """``ss -tin`` of ``node``: TCP sockets with their internal state (cwnd, rtt, retrans, ...)."""
        return self.run(node, ["ss", "-tin"]).stdout

    def _configured_egresses(self) -> list[tuple[str, str]]:
        out = []
        for link in self.topology.links:
            for node in link.egress:
                peer = link.b if node == link.a else link.a
                out.append((node, self.device(node, peer)))
        return out

    def _wait_listening(self, node: str, port: int, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if f":{port} " in self.run(node, ["ss", "-Hltn"]).stdout:
                return
            time.sleep(0.02)
        raise LabError(f"iperf3 server on {node} port {port} did not start listening")

    def _snapshot(self, nodes: Sequence[str]) -> dict[str, Any]:
        egresses = self._configured_egresses()
        return {
            "egresses": egresses,
            "nodes": list(nodes),
            "qdiscs": [q for node, dev in egresses for q in self.qdiscs(node, dev)],
            "links": {node: self.link_counters(node) for node in self.topology.nodes},
            "nstat": {node: self.nstat(node) for node in nodes},
            "load": load_average(),
            "softnet": softnet_drops(),
            "cpu": cpu_snapshot(),
        }

    def _collect(
        self,
        before: dict[str, Any],
        jobs: Sequence[Any],
        flows: list[FlowRecord],
        app_cpu_s: float,
        wall_s: float,
        samples: list[tuple[float, str, str, int, int]],
    ) -> TrafficRun:
        cpu = cpu_snapshot().minus(before["cpu"])
        q_after = [q for node, dev in before["egresses"] for q in self.qdiscs(node, dev)]
        links = {}
        for node in self.topology.nodes:
            after = self.link_counters(node)
            old = before["links"][node]
            links[node] = {dev: after[dev].minus(old[dev]) for dev in after if dev in old}
        nstat = {}
        for node in before["nodes"]:
            after_n, old_n = self.nstat(node), before["nstat"][node]
            nstat[node] = {k: v - old_n.get(k, 0) for k, v in after_n.items() if v - old_n.get(k, 0)}
        return TrafficRun(
            jobs=list(jobs),
            flows=flows,
            qdiscs=[after.minus(old) for after, old in zip(q_after, before["qdiscs"])],
            links=links,
            nstat=nstat,
            cpu=cpu,
            iperf3_cpu_s=app_cpu_s,
            wall_s=wall_s,
            load_before=before["load"],
            load_after=load_average(),
            softnet_drops=softnet_drops() - before["softnet"],
            qdisc_samples=samples,
            devices=self.device_table(),
        )

    @contextlib.contextmanager
    def _sampling(self, interval_s: Optional[float], t0: float) -> Iterator[list[tuple[float, str, str, int, int]]]:
        samples: list[tuple[float, str, str, int, int]] = []
        stop = threading.Event()
        sampler = None
        if interval_s:
            args = (self._configured_egresses(), interval_s, t0, samples, stop)
            sampler = threading.Thread(target=self._sample, args=args)
            sampler.start()
        try:
            yield samples
        finally:
            stop.set()
            if sampler is not None:
                sampler.join()

    def _check_ends(self, index: int, src: str, dst: str, cc: Optional[str]) -> None:
        for end in (src, dst):
            if end not in self.topology.hosts:
                raise LabError(f"jobs[{index}]: {end!r} is not a host; hosts: {', '.join(self.topology.hosts)}")
        if cc and cc not in CONGESTION_CONTROLS:
            raise LabError(f"jobs[{index}].cc: {unknown_value(cc, CONGESTION_CONTROLS)}")

    def iperf3(
        self,
        jobs: Sequence[Iperf3Job],
        timeout_s: Optional[float] = None,
        sample_interval_s: Optional[float] = None,
        nstat_nodes: Optional[Sequence[str]] = None,
        trace_scheduler: bool = True,
        socket_nodes: Sequence[str] = (),
    ) -> TrafficRun:
        """Run iperf3 jobs at the same time and collect goodput, retransmits, queue and CPU counters.

        ``trace_scheduler`` (where tracefs is available) records the
        distribution of every iperf3 process's scheduling waits
        (:mod:`fabricsim.validation.sched_trace`) into its reader or writer stats.

        ``sample_interval_s`` polls the backlog of every configured queue
        during the run (each poll runs ``tc``, which costs CPU: keep it
        coarse); ``socket_nodes`` are the nodes whose established TCP sockets
        it also polls then (``ss -tmin``: receive buffer, queued memory,
        ``rcv_space``, ``rcv_ssthresh``), kept in :attr:`TrafficRun.socket_samples`.
        Sized jobs (``bytes``) end when the client has written its
        bytes, so their receiver counts and times stop short of delivery: use
        :meth:`transfers` for job completion times.
        """
        if not jobs:
            raise LabError("iperf3: no jobs")
        _require(("iperf3", "ss", "nstat"))
        servers = []
        for index, job in enumerate(jobs):
            self._check_ends(index, job.src, job.dst, job.cc if job.udp_rate_bps is None else None)
            server = job.pinned(["iperf3", "-s", "-1", "-p", str(_IPERF_BASE_PORT + index)])
            servers.append(self.spawn(job.dst, server, stdout=subprocess.DEVNULL))
        for index, job in enumerate(jobs):
            self._wait_listening(job.dst, _IPERF_BASE_PORT + index)
        nodes = list(nstat_nodes) if nstat_nodes is not None else sorted({j.src for j in jobs} | {j.dst for j in jobs})
        before = self._snapshot(nodes)
        self._socket_nodes, self._socket_samples = tuple(socket_nodes), []
        clients: list[tuple[float, subprocess.Popen[str]]] = []
        t0 = time.monotonic()
        longest = max((j.duration_s or 0.0) + j.start_delay_s for j in jobs)
        limit = timeout_s or (longest + 60.0 if all(j.bytes is None for j in jobs) else 600.0)
        outputs = []
        watch_servers = _ProcessWatch([s.pid for s in servers])
        watch_clients = _ProcessWatch()
        watching = contextlib.closing(watch_servers), contextlib.closing(watch_clients)
        tracer = sched_trace.SchedTrace("iperf3") if trace_scheduler and sched_trace.available() is None else None
        tracing = tracer if tracer is not None else contextlib.nullcontext()
        with self._sampling(sample_interval_s, t0) as samples, watching[0], watching[1], tracing:
            for index, job in enumerate(jobs):
                if job.start_delay_s:
                    time.sleep(max(0.0, t0 + job.start_delay_s - time.monotonic()))
                argv = job.argv(self.address(job.dst, tunnel=job.tunnel), _IPERF_BASE_PORT + index)
                clients.append((time.monotonic() - t0, self.spawn(job.src, argv)))
                watch_clients.add(clients[-1][1].pid)
            for started, process in clients:
                try:
                    out, err = process.communicate(timeout=max(1.0, t0 + limit - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise LabError(f"iperf3 did not finish within {limit:.0f} s") from None
                if not out.strip():
                    raise LabError(f"iperf3 client failed ({process.returncode}): {err.strip()}")
                outputs.append((started, out))
        readers, writers = watch_servers.close(), watch_clients.close()
        waits = sched_trace.summaries(tracer, [r.pid for r in readers] + [w.pid for w in writers])
        for stats in (*readers, *writers):
            stats.sched = waits.get(stats.pid)
        wall = time.monotonic() - t0
        for server in servers:
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=5)
        flows: list[FlowRecord] = []
        app_cpu = 0.0
        for index, (job, (started, text)) in enumerate(zip(jobs, outputs)):
            summary = parse_iperf3(text)
            app_cpu += (summary.sender_cpu_percent + summary.receiver_cpu_percent) / 100.0 * summary.seconds
            for stream_index, stream in enumerate(summary.streams):
                seconds = stream["seconds"]
                flows.append(
                    FlowRecord(
                        job=index,
                        stream=stream_index,
                        src=job.src,
                        dst=job.dst,
                        protocol=summary.protocol.lower(),
                        cc=summary.cc,
                        bytes_sent=stream["bytes_sent"],
                        bytes_received=stream["bytes_received"],
                        seconds=seconds,
                        goodput_bps=8.0 * stream["bytes_received"] / seconds if seconds > 0 else 0.0,
                        retransmits=stream["retransmits"],
                        max_cwnd_bytes=stream.get("max_cwnd_bytes", 0),
                        min_rtt_us=stream.get("min_rtt_us", 0),
                        mean_rtt_us=stream.get("mean_rtt_us", 0),
                        max_rtt_us=stream.get("max_rtt_us", 0),
                        completion_s=None,
                        lost_packets=stream.get("lost_packets"),
                        packets=stream.get("packets"),
                        jitter_ms=stream.get("jitter_ms"),
                        intervals=tuple(tuple(i) for i in stream.get("intervals", [])),  # type: ignore[misc]
                    )
                )
        run = self._collect(before, jobs, flows, app_cpu, wall, samples)
        run.readers = readers
        run.writers = writers
        run.client_starts_s = [started for started, _ in clients]
        run.socket_samples, self._socket_nodes, self._socket_samples = self._socket_samples, (), []
        return run

    def transfers(
        self,
        jobs: Sequence[Transfer],
        timeout_s: float = 600.0,
        sample_interval_s: Optional[float] = None,
        nstat_nodes: Optional[Sequence[str]] = None,
    ) -> TrafficRun:
        """Sized TCP transfers with exact completion times (:mod:`fabricsim.validation.linux_transfer`).

        The senders connect at one common start time (plus their
        ``start_delay_s``); ``completion_s`` of a flow is the time from that
        start to the receiver's last byte; the run's ``job_completion_s`` is the
        largest. ``seconds`` and ``goodput_bps`` are per flow, from its own
        start to its last byte. Retransmissions, cwnd and RTT come from the
        sender's TCP_INFO after every byte was acknowledged.
        """
        if not jobs:
            raise LabError("transfers: no jobs")
        _require(("ss", "nstat"))
        # The tool lives beside this package, in fabricsim/validation.
        script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "linux_transfer.py")
        python = sys.executable or "python3"
        servers = []
        for index, job in enumerate(jobs):
            self._check_ends(index, job.src, job.dst, job.cc)
            port = _TRANSFER_BASE_PORT + index
            servers.append(self.spawn(job.dst, job.pinned([python, script, "server", str(port)])))
        for index, job in enumerate(jobs):
            self._wait_listening(job.dst, _TRANSFER_BASE_PORT + index)
        nodes = list(nstat_nodes) if nstat_nodes is not None else sorted({j.src for j in jobs} | {j.dst for j in jobs})
        before = self._snapshot(nodes)
        # Every client starts its interpreter, then waits for one common start time (one monotonic
        # clock for all namespaces), so that interpreter start-up does not skew the start times.
        t0 = time.monotonic() + _TRANSFER_LEAD_S
        clients = []
        with self._sampling(sample_interval_s, t0) as samples:
            for index, job in enumerate(jobs):
                address = self.address(job.dst, tunnel=job.tunnel)
                argv = [python, script, "client", address, str(_TRANSFER_BASE_PORT + index), str(job.bytes)]
                argv += [job.cc or "", repr(t0 + job.start_delay_s)]
                clients.append(self.spawn(job.src, job.pinned(argv)))
            results = []
            for process, server in zip(clients, servers):
                try:
                    out, err = process.communicate(timeout=max(1.0, t0 + timeout_s - time.monotonic()))
                    s_out, s_err = server.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    raise LabError(f"transfers did not finish within {timeout_s:.0f} s") from None
                if process.returncode or server.returncode:
                    raise LabError(f"transfer failed: {(err or s_err).strip()}")
                results.append((json.loads(out), json.loads(s_out)))
        wall = time.monotonic() - t0
        late = max(sent["start_s"] - sent["start_at_s"] for sent, _ in results)
        if late > 0.05:
            raise LabError(f"transfers: a sender started {late * 1e3:.0f} ms late (the machine is too busy)")
        origin = t0
        flows = []
        for index, (job, (sent, got)) in enumerate(zip(jobs, results)):
            seconds = got["last_byte_s"] - sent["start_s"]
            flows.append(
                FlowRecord(
                    job=index,
                    stream=0,
                    src=job.src,
                    dst=job.dst,
                    protocol="tcp",
                    cc=job.cc or "",
                    bytes_sent=sent["bytes"],
                    bytes_received=got["bytes"],
                    seconds=seconds,
                    goodput_bps=8.0 * got["bytes"] / seconds if seconds > 0 else 0.0,
                    retransmits=sent["total_retrans"],
                    max_cwnd_bytes=0,
                    min_rtt_us=0,
                    mean_rtt_us=sent["rtt_us"],
                    max_rtt_us=0,
                    completion_s=got["last_byte_s"] - origin,
                )
            )
        return self._collect(before, jobs, flows, 0.0, wall, samples)

    def _sample(
        self,
        egresses: list[tuple[str, str]],
        interval: float,
        t0: float,
        samples: list[tuple[float, str, str, int, int]],
        stop: threading.Event,
    ) -> None:
        while not stop.wait(interval):
            for node in self._socket_nodes:
                try:
                    text = self.run(node, ["ss", "-tmin", "state", "established"]).stdout
                except (LabError, subprocess.TimeoutExpired):
                    return
                now = time.monotonic() - t0
                self._socket_samples += [(now, node, sock) for sock in parse_ss_memory(text)]
            for node, dev in egresses:
                try:
                    stats = self.qdiscs(node, dev)
                except (LabError, subprocess.TimeoutExpired):
                    return
                leaf = [q for q in stats if q.parent != "root"] or stats
                if leaf:
                    samples.append((time.monotonic() - t0, node, dev, leaf[-1].backlog_bytes, leaf[-1].drops))

    def sockperf_pingpong(
        self,
        src: str,
        dst: str,
        message_bytes: int = 64,
        duration_s: float = 5.0,
        tcp: bool = False,
        tunnel: bool = False,
        port: int = 11111,
        awake: bool = False,
    ) -> LatencyRecord:
        """One-way latency (half round trip) from ``sockperf ping-pong`` between two hosts.

        ``awake`` keeps every CPU busy with a spinning process at the lowest
        priority (nice 19) while the probe runs: on otherwise idle CPUs each
        ping and pong waits for an idle CPU to wake up (tens of microseconds
        on this lab's virtual CPUs), which a bulk transfer's packets, forwarded
        in softirq on CPUs already running, do not."""
        _require(("sockperf",))
        address = self.address(dst, tunnel=tunnel)
        proto = ["--tcp"] if tcp else []
        server = self.spawn(dst, ["sockperf", "server", "-i", address, "-p", str(port), *proto], subprocess.DEVNULL)
        spinners = [
            subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"], start_new_session=True)
            for _ in range(os.cpu_count() or 1)
        ] if awake else []
        try:
            if tcp:
                self._wait_listening(dst, port)
            else:
                time.sleep(0.3)
            done = self.run(
                src,
                ["sockperf", "ping-pong", "-i", address, "-p", str(port), "-t", f"{duration_s:g}"]
                + ["-m", str(message_bytes), *proto],
                timeout=duration_s + 30,
            )
        finally:
            for spinner in spinners:
                spinner.kill()
                spinner.wait()
            server.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=5)
        return parse_sockperf(done.stdout + done.stderr, message_bytes, "tcp" if tcp else "udp")


@contextlib.contextmanager
def lab(topology: Topology | Mapping[str, Any]) -> Iterator[Lab]:
    """``with lab({...}) as l:`` builds a topology from a dict or a Topology and deletes it afterwards."""
    topo = topology if isinstance(topology, Topology) else Topology.from_dict(topology)
    with Lab(topo) as built:
        yield built
