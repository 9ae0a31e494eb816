"""Text preparation recorded with a Sent2Vec model and applied before every lookup.

The official sent2vec code does no preparation: it splits on whitespace and looks the tokens up as
they are. A model trained on text that was tokenized (Moses) and lower-cased expects the same at
inference time, so the model carries a :class:`Preprocessing` record and ``encode`` applies it.

* ``tokenizer="whitespace"``: tokens are split on the official separators (space, ``\\t``,
  ``\\n``, ``\\r``, ``\\v``, ``\\f``, NUL) — the default, and the only choice for official
  ``.bin`` files, which record nothing.
* ``tokenizer="moses"``: sacremoses ``MosesTokenizer("en").tokenize(line.strip(),
  escape=False)``, the recipe of the reference corpus and of the SentEval STS files, computed by
  the compiled :class:`sentvec.sent2vec.moses.MosesTokenizer` (the same tokens, with sacremoses
  as its fallback).
* ``lowercase=True``: :meth:`str.lower` after tokenizing (the reference corpus recipe).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Literal

from sentvec._validation import check_choice
from sentvec.sent2vec.dictionary import split_tokens

#: Valid ``tokenizer`` values.
TOKENIZERS: tuple[str, ...] = ("whitespace", "moses")
TokenizerName = Literal["whitespace", "moses"]


@lru_cache(maxsize=2)
def _moses(lowercase: bool) -> Any:
    from sentvec.sent2vec.moses import MosesTokenizer

    return MosesTokenizer(lowercase=lowercase)


@dataclass(frozen=True)
class Preprocessing:
    """How raw text is prepared before its tokens are looked up.

    Parameters
    ----------
    lowercase : bool, default False
        Lower-case the text (after tokenizing).
    tokenizer : {"whitespace", "moses"}, default "whitespace"
    """

    lowercase: bool = False
    tokenizer: TokenizerName = "whitespace"

    def __post_init__(self) -> None:
        check_choice("tokenizer", self.tokenizer, TOKENIZERS)
        if not isinstance(self.lowercase, bool):
            raise TypeError(f"lowercase must be a bool, got {type(self.lowercase).__name__}")

    @property
    def is_identity(self) -> bool:
        """True when text is used as given (whitespace split, no lower-casing)."""
        return self.tokenizer == "whitespace" and not self.lowercase

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Preprocessing:
        """Build from a record (``None`` or ``{}`` gives the default, no preparation)."""
        d = dict(d or {})
        unknown = set(d) - {"lowercase", "tokenizer"}
        if unknown:
            raise ValueError(
                f"unknown preprocessing keys {sorted(unknown)}; expected ['lowercase', 'tokenizer']"
            )
        return cls(**d)

    def tokens(self, text: str) -> list[str]:
        """Tokens of ``text`` exactly as inference looks them up."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        if self.tokenizer == "moses":  # Moses tokens hold no separator; lower-cased by it
            return _moses(self.lowercase).tokenize(text)
        toks = split_tokens(text)
        if self.lowercase:
            toks = [t.lower() for t in toks]
        return toks

    def prepare(self, text: str) -> str:
        """``text`` prepared for lookup: its :meth:`tokens` joined by single spaces."""
        return " ".join(self.tokens(text))

    def prepare_for_lookup(self, text: str) -> str:
        """Cheapest string with the same tokens as :meth:`prepare` (used by ``encode``)."""
        if self.tokenizer == "whitespace":
            return text.lower() if self.lowercase else text
        return self.prepare(text)

    def prepare_batch(self, texts: Sequence[str]) -> list[str]:
        """:meth:`prepare_for_lookup` of every item; Moses tokenizes the batch at once.

        Raises
        ------
        TypeError
            If an item is not a str.
        """
        if self.tokenizer == "whitespace":
            return [self.prepare_for_lookup(t) for t in texts]
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"text must be str, got {type(t).__name__}")
        return _moses(self.lowercase).tokenize_lines(texts)
