"""make mlflow / make viz: a taken port is refused by number before a server starts."""

from __future__ import annotations

import socket

from click.testing import CliRunner

from connect_zero_pipeline.commands.serve import port_taken, serve_ui


def _serve(*args: str):
    return CliRunner().invoke(serve_ui, list(args))


def test_a_taken_port_is_an_error_that_names_it(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken(port)
        for ui, variable in (("mlflow", "MLFLOW_PORT"), ("viz", "VIZ_PORT")):
            res = _serve(ui, str(port))
            err = res.stderr
            assert res.exit_code == 2
            assert f"port {port} on 127.0.0.1 is taken" in err and f"{variable}=<port>" in err
    assert not port_taken(port)  # released: free again
    res = _serve("nosuch", "1")
    assert res.exit_code == 2 and "Usage:" in res.stderr
