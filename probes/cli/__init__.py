"""The ``mluke`` subcommands that run ``probes``' evaluations and analyses: ``eval-mlama``, ``eval-demo``,
``eval-lmkbc``, ``eval-aida``, ``eval-nif``, ``eval-xfactr``, ``eval-bear``, ``eval-link``, ``finetune``,
``evaluate``, ``index``, ``eval-cwr``, ``modularity`` and ``parallel-spans``.

Each module declares :class:`mluke.cli.registry.Command` objects that pyproject.toml names as entry points of
the group ``mluke.commands``; :mod:`mluke.cli` finds them there and lists them among its own commands, so the
``mluke`` command line reads the same while importing nothing of ``probes``. Like the command line's own
modules, these only parse arguments, call one documented ``probes`` function (imported when the command runs,
after its inputs are checked) and print or write its result.
"""
