import pytest

import mluke.demo.model as demo_module
from mluke.cli.checks import DEMO_HIDDEN_SIZE, hidden_size
from mluke.opening import DEMO, is_demo, open_model


def test_the_name_demo_is_the_embedded_demo_model(tiny_checkpoint, monkeypatch, tmp_path):
    asked = []
    monkeypatch.setattr(demo_module, "demo_model", lambda: asked.append(1) or tiny_checkpoint)
    bundle = open_model(DEMO)
    assert asked == [1] and bundle.tokenizer.vocab_size > 0
    assert is_demo(None) and is_demo("demo") and not is_demo("./demo") and not is_demo(tmp_path / "demo")
    assert hidden_size("demo") == hidden_size(None) == DEMO_HIDDEN_SIZE
    # a folder named demo is reached as a path
    with pytest.raises(Exception, match="demo"):
        open_model(str(tmp_path / "demo"))
