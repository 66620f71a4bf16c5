import warnings

import pytest

from kb.renamed import renamed_keyword


@renamed_keyword("kb", "db")
def _open(name: str, *, db: str | None = None) -> tuple[str, str | None]:
    return name, db


def test_old_keyword_still_works_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"_open\(kb=\.\.\.\) is deprecated; use db="):
        assert _open("x", kb="k.sqlite") == ("x", "k.sqlite")


def test_new_keyword_gives_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _open("x", db="k.sqlite") == ("x", "k.sqlite")


def test_both_keywords_are_refused() -> None:
    with pytest.raises(TypeError, match="got both kb= and db="):
        _open("x", kb="a", db="b")
