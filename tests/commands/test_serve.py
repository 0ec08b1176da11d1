"""make mlflow / make viz: a taken port is refused by number before a server starts."""

from __future__ import annotations

import socket

from connect_zero_pipeline.commands.serve import main, port_taken


def test_a_taken_port_is_an_error_that_names_it(tmp_path, capsys):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert port_taken(port)
        for ui, variable in (("mlflow", "MLFLOW_PORT"), ("viz", "VIZ_PORT")):
            assert main([ui, str(port)]) == 2
            err = capsys.readouterr().err
            assert f"port {port} on 127.0.0.1 is taken" in err and f"{variable}=<port>" in err
    assert not port_taken(port)  # released: free again
    assert main(["nosuch", "1"]) == 2 and "usage:" in capsys.readouterr().err
