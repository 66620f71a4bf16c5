"""``mluke serve``: a thin wrapper over :func:`mluke.serve.running.serve` (the HTTP service, :mod:`mluke.serve`)."""

from __future__ import annotations

from typing import Annotated

import typer

from mluke.cli import checks
from mluke.cli.params import DbOption, DeviceOption, ModelOption


def serve(
    host: Annotated[
        str, typer.Option(help="Address to listen on; 127.0.0.1 (default) is this machine only, 0.0.0.0 every network.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    model: ModelOption = None,
    db: DbOption = None,
    device: DeviceOption = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Bearer token every API request must carry ('Authorization: Bearer TOKEN'); default: "
            "$MLUKE_SERVE_TOKEN, else none."
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option("--cors-origin", help="An origin whose pages may call the API from a browser (repeatable)."),
    ] = None,
    max_texts: Annotated[int, typer.Option(help="Texts per request at most (more: 413).")] = 64,
    max_text_chars: Annotated[int, typer.Option(help="Characters per text at most (more: 413).")] = 100_000,
    max_body_bytes: Annotated[int, typer.Option(help="Bytes per request body at most (more: 413).")] = 1 << 20,
    queue_texts: Annotated[int, typer.Option(help="Texts waiting for the model at most (more: 503).")] = 1024,
    batch_texts: Annotated[int, typer.Option(help="Texts per model call at most.")] = 64,
    gather_ms: Annotated[
        float, typer.Option(help="How long a request to an idle service waits for others to share its model call.")
    ] = 5.0,
    batching: Annotated[
        bool, typer.Option("--batching/--no-batching", help="Link requests that arrive together in one model call.")
    ] = True,
    timeout: Annotated[float, typer.Option(help="Seconds a request may take before it is cancelled (504).")] = 60.0,
) -> None:
    """Serve linking and probing over HTTP (JSON API, NIF for GERBIL, a page at /), e.g. mluke serve --port 8000"""
    checks.at_least("--port", port, 1)
    checks.device(device, None)
    from mluke.serve.config import Limits, ServeConfig, token_from_env
    from mluke.serve.running import serve as run

    limits = Limits(  # a bad size fails here, naming its flag
        max_body_bytes=max_body_bytes,
        max_text_chars=max_text_chars,
        max_texts=max_texts,
        queue_texts=queue_texts,
        batch_texts=batch_texts,
        gather_ms=gather_ms,
        batching=batching,
        timeout_s=timeout,
    )
    config = ServeConfig(
        model=model,
        db=str(db) if db is not None else None,
        device=device,
        token=token_from_env(token),
        cors_origins=tuple(cors_origin or ()),
        limits=limits,
    )
    run(config, host=host, port=port, say=lambda line: typer.echo(line, err=True))
