"""finsec/net/ports.py: a port for a server that binds it later is free when picked, never handed out twice,
and outside the kernel's ephemeral range, where an outgoing connection's local port could take it first."""

from __future__ import annotations

import socket

from finsec.net.ports import ephemeral_range, free_port


def test_ports_are_free_distinct_and_below_the_ephemeral_range():
    low, high = ephemeral_range()
    assert low < high
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    assert all(port < low for port in ports), (low, [p for p in ports if p >= low][:5])
    for port in ports[:20]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # still free: nothing else was told of it


def test_a_port_bound_elsewhere_is_not_handed_out(monkeypatch):
    """In a window of 100 ports below the ephemeral range, with 90 of them bound by other sockets, every port
    handed out is one of the ten free ones."""
    from finsec.net import ports

    low, _ = ephemeral_range()
    monkeypatch.setattr(ports, "_LOWEST", low - 1_100)  # free_port draws from [_LOWEST, low)
    window = range(low - 100, low)
    monkeypatch.setattr(ports.random, "randrange", lambda a, b: ports.random.choice(window))
    held = []
    try:
        for port in window[:90]:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # already taken on this machine: bound elsewhere all the same
                s.close()
                continue
            held.append(s)
        handed = {free_port() for _ in range(5)}
        assert handed <= set(window[90:]), handed
    finally:
        for s in held:
            s.close()
