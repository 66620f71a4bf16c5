"""The JSON the service takes and gives, one pydantic model per request and response (they make ``/openapi.json``).

Requests are strict: a number is not a text, a text is not a number, unknown fields are refused (a typo such as
``"lnag"`` would otherwise be ignored). Sizes that depend on the service's :class:`mluke.serve.config.Limits`
(texts per request, characters per text) are checked by the service and answered 413.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, model_validator

Lang = Field(
    default="en",
    description="The language of the texts: a language of the kb (GET /info lists them).",
    examples=["en"],
)
Number = StrictFloat | StrictInt


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TextsRequest(Strict):
    """One text (``text``) or a list of them (``texts``), in one language."""

    text: StrictStr | None = Field(default=None, description="One text (or give `texts`).")
    texts: list[StrictStr] | None = Field(default=None, description="Several texts, linked in one batch.")
    lang: StrictStr = Lang

    @model_validator(mode="after")
    def one_of(self) -> TextsRequest:
        if (self.text is None) == (self.texts is None):
            raise ValueError("give either `text` or `texts`")
        return self

    def all_texts(self) -> list[str]:
        """The request's texts, one or several."""
        return [self.text] if self.text is not None else list(self.texts or [])


class LinkFields(Strict):
    """The fields of :class:`mluke.LinkOptions` a request may set."""

    method: Literal["combined", "prior", "model", "global"] = Field(
        default="combined", description="How to decide: model + prior ('combined'), 'prior', 'model' or 'global'."
    )
    prior_weight: Number = Field(default=1.0, ge=0, le=1e6, description="Weight of log p(entity | mention).")
    nil_threshold: Number | None = Field(
        default=None, ge=0, le=1, description="Mentions below this confidence are NIL (default: calibrated)."
    )
    candidates: StrictInt = Field(default=0, ge=0, description="Runner-up candidates to return per mention.")
    window_chars: StrictInt = Field(default=1000, ge=100, le=10_000, description="Characters per model window.")


class LinkRequest(TextsRequest, LinkFields):
    """``POST /link``: find the mentions of the texts and link each to a kb entity."""


class MentionsRequest(TextsRequest):
    """``POST /mentions``: the mentions of the texts, with their link probability (no model)."""


class CandidatesRequest(Strict):
    """``POST /candidates``: the kb entities a surface may refer to, with their priors p(entity | surface)."""

    surface: StrictStr | None = Field(default=None, description="One surface (or give `surfaces`).", examples=["Tokyo"])
    surfaces: list[StrictStr] | None = Field(default=None, description="Several surfaces.")
    lang: StrictStr = Lang
    k: StrictInt = Field(default=10, ge=1, description="Candidates per surface, best first.")

    @model_validator(mode="after")
    def one_of(self) -> CandidatesRequest:
        if (self.surface is None) == (self.surfaces is None):
            raise ValueError("give either `surface` or `surfaces`")
        return self


Span = list[StrictInt]


class DisambiguateRequest(TextsRequest, LinkFields):
    """``POST /disambiguate``: link given spans. REL's request shape ``{"text": ..., "spans": [[start, length],
    ...]}`` is one form of it; an empty ``spans`` list detects the mentions too (as REL does)."""

    spans: list[Span] | list[list[Span]] = Field(
        default_factory=list,
        description="[start, length] pairs in characters: one list for `text`, one list per text for `texts`.",
        examples=[[[0, 5]]],
    )
    format: Literal["mluke", "rel"] = Field(
        default="mluke",
        description="'rel': REL's answer, a list of [start, length, mention, title, md_score, ed_score, tag].",
    )


class ProbeRequest(Strict):
    """``POST /probe``: ask the model a cloze question (a template with [X] and [Y])."""

    template: StrictStr = Field(description="Exactly one [X] and one [Y].", examples=["[X] is the capital of [Y]."])
    lang: StrictStr = Lang
    subjects: list[StrictStr] | None = Field(default=None, description="Labels or keys; default: the kb's.")
    candidates: list[StrictStr] | None = Field(default=None, description="Labels or keys of possible answers.")
    mode: Literal["entity", "word", "both"] | None = Field(default=None, description="Entity or word masks.")
    top_k: StrictInt = Field(default=5, ge=1, description="Answers per subject.")
    threshold: Number | None = Field(default=None, gt=0, le=1, description="Every answer of at least this p.")
    model: StrictStr | None = Field(default=None, description="The served model's name (GET /info); no other.")


class ServedBy(BaseModel):
    """What produced an answer: the model and the kb, so a result can be traced."""

    model: str = Field(description="The model's folder or hub name.")
    model_fingerprint: str = Field(description="A hash of the model's config and weights files.")
    kb: str = Field(description="The kb's path.")
    kb_built: str | None = Field(description="When the kb was built.")
    version: str = Field(description="The mluke version.")


class Candidate(BaseModel):
    key: str
    qid: str | None
    name: str | None = Field(description="Qualified name in the request's language.")
    prior: float
    score: float | None = None
    model: float | None = None


class LinkedMention(BaseModel):
    start: int = Field(description="Character offset (Python, code points).")
    end: int
    start_utf16: int = Field(description="UTF-16 offset (JavaScript).")
    end_utf16: int
    surface: str
    key: str | None = Field(description="The entity's key, null when NIL.")
    qid: str | None = Field(description="The Wikidata QID, when the key is one.")
    label: str | None = Field(description="The entity's name in the request's language.")
    name: str | None = Field(description="Qualified name, e.g. 'Cambridge (United Kingdom)' (top candidate).")
    title: str | None
    kind: str | None = Field(description="The entity's kind (country, city, person, ...).")
    confidence: float
    score: float | None
    prior: float
    link_probability: float | None
    nil: bool
    candidates: list[Candidate] | None = None


class LinkedText(BaseModel):
    mentions: list[LinkedMention]


class LinkResponse(BaseModel):
    results: list[LinkedText]
    lang: str
    served_by: ServedBy


class Mention(BaseModel):
    start: int
    end: int
    start_utf16: int
    end_utf16: int
    surface: str
    link_probability: float | None
    candidates: int = Field(description="How many kb candidates the surface has.")


class MentionsResponse(BaseModel):
    results: list[dict[str, list[Mention]]]
    lang: str
    served_by: ServedBy


class CandidatesResponse(BaseModel):
    results: list[dict[str, Any]]
    lang: str
    served_by: ServedBy


class Answer(BaseModel):
    key: str
    label: str
    score: float
    source: str


class ProbeRow(BaseModel):
    subject: str | None
    label: str
    answers: list[Answer]
    gold: list[str]


class ProbeResponse(BaseModel):
    template: str
    lang: str
    relation: str | None
    mode: str
    rows: list[ProbeRow]
    notes: list[str]
    served_by: ServedBy


class EntityResponse(BaseModel):
    key: str
    qid: str | None
    kind: str | None
    names: dict[str, str] = Field(description="Label (else title) in every language.")
    titles: dict[str, str]
    aliases: dict[str, list[str]]
    qualified_names: dict[str, str] = Field(description="Qualified name in every language (a description).")
    facts: list[dict[str, Any]]
    served_by: ServedBy


class InfoResponse(BaseModel):
    served_by: ServedBy
    languages: list[str]
    limits: dict[str, Any]
    batching: dict[str, Any]


class ErrorBody(BaseModel):
    """Every 4xx and 5xx answer: one line that names the field at fault."""

    error: str = Field(examples=["lang: unknown language 'xx': expected one of ar, de, en, ja"])
    field: str | None = Field(default=None, description="The request field at fault, when there is one.")
