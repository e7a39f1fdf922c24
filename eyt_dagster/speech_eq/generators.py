"""SpeechEQ text generators (paper §2.2-2.3, App. B; docs/method.md): scenario, six-turn dialogue, its validation,
tone instructions and tone selection, behind one protocol so the text-stage assets never know which one runs.

* `TemplateGenerator`: the embedded template baseline (eyt_dagster/speech_eq/templates.py), no language model.
* `LLMSpeechGenerator`: a chat model through the same ChatClient as EYT-Bench's roles. Prompts come from
  eyt_dagster/prompts/speech_en.yaml (`EYT_SPEECH_PROMPTS` overrides); JSON replies are validated with the
  pydantic schemas below, and a reply that does not validate is re-asked by the client.

Slots: a context turn (1, 2, 3, 5) has one tone slot, persona kind "context"; a test turn (4, 6) has three:
"resonant" and "dissonant:<archetype>" for each of the scenario's two dissonant personas (`tone_slots`).
The assets apply the bland-word / length rule (tones.rejection_reason) and ask again with the rejected
attempts, so a model can avoid repeating them; every request differs from the last, which matters because
identical requests are answered from the call cache.
"""

from __future__ import annotations

import copy
import itertools
import random
import re
from collections.abc import Sequence
from functools import lru_cache
from types import ModuleType
from typing import Annotated, Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from eyt_dagster.core.chat_protocol import ChatClient
from eyt_dagster.core.languages import DEFAULT_LANGUAGE
from eyt_dagster.core.prompts import load_prompts, prompt_hash, render
from eyt_dagster.core.reply_limits import LABEL_CHARS, PARAGRAPH_CHARS, SENTENCE_CHARS, SPOKEN_LINE_CHARS
from eyt_dagster.speech_eq import templates, templates_zh
from eyt_dagster.speech_eq.item_types import Line, Scenario, Speaker
from eyt_dagster.speech_eq.prompts import SPEECH_PROMPT_KEYS, speech_prompts_path
from eyt_dagster.speech_eq.vocabulary import (
    BLAND_WORDS,
    CONTEXT_TURNS,
    FAILURE_ARCHETYPES,
    SCENARIO_TYPES,
    SPARING_ARCHETYPE,
    TEST_TURNS,
    TONE_WORDS_MAX,
    TONE_WORDS_MIN,
    TURN_ROLE,
    TURN_SPEAKER,
    eq_scale,
)

TEMPLATE = templates.GENERATOR_NAME
TEMPLATE_NOTE = "template lines are neutral by construction"
NOT_CHECKED_NOTE = "not checked: the dialogue validator is the template baseline (no model configured)"
MAX_DIALOGUE_ATTEMPTS = 3  # the first version and up to two regenerations when the validator says no


def tone_slots(scenario: Scenario) -> dict[int, list[str]]:
    """The persona kind of every tone slot, per turn: 'context' for turns 1, 2, 3, 5; 'resonant' and
    'dissonant:<archetype>' (one per dissonant persona, in order) for turns 4 and 6."""
    slots: dict[int, list[str]] = {turn: ["context"] for turn in CONTEXT_TURNS}
    for turn in TEST_TURNS:
        slots[turn] = ["resonant"] + [f"dissonant:{a}" for a in scenario.dissonant_personas]
    return dict(sorted(slots.items()))


def speech_prompt_hash(*keys: str) -> str:
    """Hash of the named speech prompts (all of them when none are named)."""
    return prompt_hash(*(keys or SPEECH_PROMPT_KEYS), path=speech_prompts_path())


class SpeechGenerator(Protocol):
    """What the SpeechEQ text stages need from a generator."""

    name: str  # written in every row (the model id, or 'template-baseline')
    is_baseline: bool  # True for the embedded template generator (reports name it a baseline)
    validator_name: str  # who checks dialogues
    judge_name: str  # who selects tones
    max_concurrency: int  # scenarios of one partition handled in parallel
    language: str  # the language of its text (core/languages.py): what the tone rule counts in

    def scenario(self, slug: str, valence: str, index: int) -> Scenario: ...

    def dialogue(self, scenario: Scenario, rejected: Sequence[tuple[list[Line], str]] = ()) -> list[Line]:
        """Six lines; `rejected` holds earlier versions of this scenario's dialogue and why they were rejected."""
        ...

    def validate_dialogue(self, scenario: Scenario, lines: list[Line]) -> tuple[bool, str]:
        """(turns 4 and 6 read plausibly in either tone, note)."""
        ...

    def tone_instruction(
        self,
        scenario: Scenario,
        lines: list[Line],
        turn: int,
        persona_kind: str,
        attempt: int,
        rejected: list[tuple[str, str]],
    ) -> str:
        """One vocal instruction for a slot; `rejected` = earlier (instruction, reason) of the same slot."""
        ...

    def select_tones(
        self, scenario: Scenario, lines: list[Line], turn: int, options: list[tuple[str, str]]
    ) -> tuple[int, int, str]:
        """(resonant index, most dissonant index, reasoning) into `options` = [(persona kind, instruction)]."""
        ...


# -- the embedded template baseline ------------------------------------------------------------------------

TEMPLATE_TEXTS: dict[str, ModuleType] = {"en": templates, "zh": templates_zh}  # each: the same three functions


class TemplateGenerator:
    """The embedded template generator (templates.py) behind the SpeechGenerator protocol: a baseline, not a
    language model. Deterministic under the seed; it never needs a second attempt."""

    name = TEMPLATE
    is_baseline = True
    validator_name = TEMPLATE
    judge_name = f"{TEMPLATE} rule"
    max_concurrency = 1

    def __init__(self, seed: int, language: str = DEFAULT_LANGUAGE) -> None:
        if language not in TEMPLATE_TEXTS:
            raise ValueError(
                f"the SpeechEQ template generator has no text in language '{language}'; it has {list(TEMPLATE_TEXTS)}"
            )
        self.seed = seed
        self.language: str = language
        self.text = TEMPLATE_TEXTS[language]

    def scenario(self, slug: str, valence: str, index: int) -> Scenario:
        return self.text.make_scenario(slug, valence, index, self.seed)

    def dialogue(self, scenario: Scenario, rejected: Sequence[tuple[list[Line], str]] = ()) -> list[Line]:
        return self.text.make_dialogue(scenario, self.seed)

    def validate_dialogue(self, scenario: Scenario, lines: list[Line]) -> tuple[bool, str]:
        return True, TEMPLATE_NOTE

    def tone_instruction(
        self,
        scenario: Scenario,
        lines: list[Line],
        turn: int,
        persona_kind: str,
        attempt: int,
        rejected: list[tuple[str, str]],
    ) -> str:
        for kind, instruction in self.text.tone_options(scenario).get(turn, []):
            if kind == persona_kind:
                return instruction
        raise ValueError(f"turn {turn} has no tone slot '{persona_kind}'; its slots are {tone_slots(scenario)[turn]}")

    def select_tones(
        self, scenario: Scenario, lines: list[Line], turn: int, options: list[tuple[str, str]]
    ) -> tuple[int, int, str]:
        return templates.select_tones(options)


# -- reply schemas (what a model must send back) -----------------------------------------------------------
# The JSON schema of each is sent to the server, so it states the parser's rules, also those that tie two
# fields together (two different archetypes; six lines in turn order with the right speakers; two different
# tone options), as alternatives the schema lists. The parser still accepts a few spellings the schema does
# not offer (e.g. "The Toxic Optimist", "Female", "speaker 2") from servers that do not enforce it. One
# rule is not expressible in JSON Schema and stays a check of the parser only: the two speakers' names
# differ. See docs/remote-models.md.


def normalise_archetype(name: str) -> str:
    """'The Defensive/Snappy Reactor' -> 'defensive snappy reactor' (the eq.py spelling)."""
    text = re.sub(r"[/_\-]+", " ", name.strip().lower())
    text = re.sub(r"^the\s+", "", text)
    return re.sub(r"\s+", " ", text).strip()


class SpeakerReply(BaseModel):
    name: str = Field(min_length=1, max_length=LABEL_CHARS)
    role: str = Field(min_length=1, max_length=LABEL_CHARS)
    gender: Literal["female", "male"]
    persona: str = Field(default="", max_length=LABEL_CHARS)

    @field_validator("gender", mode="before")
    @classmethod
    def _gender(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


# Every ordered pair of two different archetypes: the schema's way of saying "two different names".
ARCHETYPE_PAIRS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "enum": [list(pair) for pair in itertools.permutations(FAILURE_ARCHETYPES, 2)],
    "description": f"Two different names from: {', '.join(FAILURE_ARCHETYPES)}",
}


class ScenarioReply(BaseModel):
    """A generated scenario; subscale, valence and scenario type are the caller's, never the model's."""

    title: str = Field(min_length=1, max_length=LABEL_CHARS)
    context: str = Field(min_length=1, max_length=SENTENCE_CHARS)
    description: str = Field(min_length=1, max_length=PARAGRAPH_CHARS)
    speaker1: SpeakerReply
    speaker2: SpeakerReply
    resonant_persona: str = Field(min_length=1, max_length=LABEL_CHARS)
    dissonant_personas: Annotated[list[str], WithJsonSchema(ARCHETYPE_PAIRS_SCHEMA)]
    skill_tested: str = Field(min_length=1, max_length=SENTENCE_CHARS)
    target_social_intent: str = Field(min_length=1, max_length=SENTENCE_CHARS)

    @field_validator("dissonant_personas")
    @classmethod
    def _archetypes(cls, value: list[str]) -> list[str]:
        names = [normalise_archetype(v) for v in value]
        unknown = [v for v, n in zip(value, names) if n not in FAILURE_ARCHETYPES]
        if unknown:
            raise ValueError(f"{unknown} not among the failure archetypes {list(FAILURE_ARCHETYPES)}")
        if len(names) != 2 or len(set(names)) != 2:
            raise ValueError(f"needs exactly two different archetypes, got {value}")
        return names

    @model_validator(mode="after")
    def _two_people(self) -> ScenarioReply:
        if self.speaker1.name.strip().lower() == self.speaker2.name.strip().lower():
            raise ValueError("speaker1 and speaker2 need different names")
        return self


_SPEAKER_RE = re.compile(r"^\s*(?:speaker\s*)?([12])\s*$", re.IGNORECASE)


class LineReply(BaseModel):
    turn: int
    speaker: int = Field(description="1 for turns 1, 3, 5; 2 for turns 2, 4, 6")
    text: str = Field(min_length=1, max_length=SPOKEN_LINE_CHARS)

    @field_validator("speaker", mode="before")
    @classmethod
    def _speaker(cls, value: Any) -> Any:
        if isinstance(value, str) and (match := _SPEAKER_RE.match(value)):
            return int(match.group(1))
        return value


def _six_lines_schema() -> dict[str, Any]:
    """The six lines in turn order, each with its turn and speaker fixed (JSON Schema prefixItems)."""
    text = LineReply.model_json_schema()["properties"]["text"]
    lines = [
        {
            "type": "object",
            "properties": {
                "turn": {"type": "integer", "const": turn},
                "speaker": {"type": "integer", "const": speaker},
                "text": text,
            },
            "required": ["turn", "speaker", "text"],
        }
        for turn, speaker in sorted(TURN_SPEAKER.items())
    ]
    return {"type": "array", "prefixItems": lines, "minItems": len(lines), "maxItems": len(lines)}


class DialogueReply(BaseModel):
    lines: Annotated[list[LineReply], WithJsonSchema(_six_lines_schema())]

    @model_validator(mode="after")
    def _six_turns(self) -> DialogueReply:
        turns = [line.turn for line in self.lines]
        if turns != [1, 2, 3, 4, 5, 6]:
            raise ValueError(f"needs exactly six lines with turns 1-6 in order, got turns {turns}")
        wrong = [
            f"turn {line.turn} is speaker {TURN_SPEAKER[line.turn]}, not {line.speaker}"
            for line in self.lines
            if TURN_SPEAKER[line.turn] != line.speaker
        ]
        if wrong:
            raise ValueError("; ".join(wrong))
        return self


class DialogueCheckReply(BaseModel):
    plausible_both_tones: bool
    note: str = Field(min_length=1, max_length=PARAGRAPH_CHARS)


def _two_different_options(schema: dict[str, Any], options: int) -> None:
    """Rewrite {resonant, dissonant, reasoning} as one alternative per resonant option, whose dissonant
    option is any other: the schema's way of saying the two differ."""
    body = {key: schema.pop(key) for key in ("type", "properties", "required")}
    variants = []
    for resonant in range(1, options + 1):
        properties = copy.deepcopy(body["properties"])
        properties["resonant"]["const"] = resonant
        properties["dissonant"]["enum"] = [d for d in range(1, options + 1) if d != resonant]
        variants.append({"type": "object", "properties": properties, "required": body["required"]})
    schema["anyOf"] = variants


class ToneSelection(Protocol):
    """The fields of a reply validated by `tone_selection_schema(n)` (a model class made per n)."""

    resonant: int
    dissonant: int
    reasoning: str


@lru_cache(maxsize=8)
def tone_selection_schema(options: int) -> type[BaseModel]:
    """{resonant, dissonant, reasoning} with both numbers in 1..options and different."""

    class ToneSelectionReply(BaseModel):
        model_config = ConfigDict(json_schema_extra=lambda schema, _: _two_different_options(schema, options))

        resonant: int = Field(ge=1, le=options, description="Option number of the resonant instruction.")
        dissonant: int = Field(ge=1, le=options, description="Option number of the most dissonant instruction.")
        reasoning: str = Field(min_length=1, max_length=PARAGRAPH_CHARS)

        @model_validator(mode="after")
        def _different(self) -> ToneSelectionReply:
            if self.resonant == self.dissonant:
                raise ValueError("resonant and dissonant must be different options")
            return self

    ToneSelectionReply.__name__ = ToneSelectionReply.__qualname__ = f"ToneSelection{options}"
    return ToneSelectionReply


# -- the chat-model generator ------------------------------------------------------------------------------


class _SameAsGenerator:
    def __repr__(self) -> str:
        return "SAME_AS_GENERATOR"


SAME_AS_GENERATOR: Any = _SameAsGenerator()


def _rng(*parts: object) -> random.Random:
    return templates._rng(*parts)


def _clean_instruction(text: str) -> str:
    """The first non-empty line, without surrounding quotes or a leading 'Instruction:' label."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = re.sub(r"^(?:tone\s+)?instruction\s*:\s*", "", line, flags=re.IGNORECASE)
    return line.strip().strip("\"'“”‘’").strip()


def dialogue_text(lines: list[Line], scenario: Scenario) -> str:
    names = {1: scenario.speaker1.name, 2: scenario.speaker2.name}
    return "\n".join(f"{line.turn}. {names[line.speaker]} (speaker {line.speaker}): {line.text}" for line in lines)


class LLMSpeechGenerator:
    """The SpeechEQ text stages played by chat models.

    `client` generates scenarios, dialogues and tone instructions. `validator` checks dialogues and `judge`
    selects tones; each defaults to `client`, and None means the embedded baseline for that job (no check:
    the validator's verdict is True with a note saying so; the tone judge is the template rule)."""

    is_baseline = False

    def __init__(
        self,
        client: ChatClient,
        seed: int,
        *,
        validator: ChatClient | None = SAME_AS_GENERATOR,
        judge: ChatClient | None = SAME_AS_GENERATOR,
        bland_words: Sequence[str] = BLAND_WORDS,
        min_words: int = TONE_WORDS_MIN,
        max_words: int = TONE_WORDS_MAX,
        max_concurrency: int = 1,
        language: str = DEFAULT_LANGUAGE,
    ) -> None:
        self.client = client
        self.seed = seed
        self.language: str = language  # its prompt file's language (speech_prompts_path) and the tone rule's
        self.validator = client if validator is SAME_AS_GENERATOR else validator
        self.judge = client if judge is SAME_AS_GENERATOR else judge
        self.name = client.model_id
        self.validator_name = self.validator.model_id if self.validator else TEMPLATE
        self.judge_name = self.judge.model_id if self.judge else f"{TEMPLATE} rule"
        self.bland_words = tuple(bland_words)
        self.min_words, self.max_words = min_words, max_words
        self.max_concurrency = max(1, max_concurrency)
        self.path = speech_prompts_path(language)
        prompts = load_prompts(self.path, SPEECH_PROMPT_KEYS)
        self._archetypes = self._mapping(prompts, "speech_scenario", "archetypes")
        self._voices = self._mapping(prompts, "speech_tone", "archetype_voices")

    def _mapping(self, prompts: dict[str, Any], key: str, part: str) -> dict[str, str]:
        mapping = prompts[key].get(part) or {}
        missing = [a for a in FAILURE_ARCHETYPES if a not in mapping]
        if not isinstance(mapping, dict) or missing:
            raise ValueError(
                f"prompt file {self.path}: {key}.{part} needs a description of {missing or 'each archetype'}"
            )
        return mapping

    def _render(self, key: str, part: str, **fields: Any) -> str:
        common = {
            "failure_archetypes": "\n".join(f"    - {a}: {self._archetypes[a]}" for a in FAILURE_ARCHETYPES),
            "sparing_archetype": SPARING_ARCHETYPE,
            "scenario_types": ", ".join(SCENARIO_TYPES),
            "bland_words": ", ".join(f'"{w}"' for w in self.bland_words),
            "min_words": self.min_words,
            "max_words": self.max_words,
        }
        return render(key, part, path=self.path, **{**common, **fields}).strip()

    def _messages(self, key: str, **fields: Any) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": self._render(key, "system", **fields)},
            {"role": "user", "content": self._render(key, "user", **fields)},
        ]

    @staticmethod
    def _scenario_fields(scenario: Scenario) -> dict[str, Any]:
        return {
            "valence": scenario.valence,
            "title": scenario.title,
            "context": scenario.context,
            "description": scenario.description,
            "speaker1_name": scenario.speaker1.name,
            "speaker1_role": scenario.speaker1.role,
            "speaker1_persona": scenario.speaker1.persona,
            "speaker2_name": scenario.speaker2.name,
            "speaker2_role": scenario.speaker2.role,
            "resonant_persona": scenario.resonant_persona,
            "skill_tested": scenario.skill_tested,
            "target_social_intent": scenario.target_social_intent,
            "dissonant_personas": ", ".join(scenario.dissonant_personas),
        }

    # -- stages ------------------------------------------------------------------------------------------

    def scenario_type(self, slug: str, valence: str, index: int) -> str:
        """Scenario types rotate with the index from a seeded starting point, so variants spread over types."""
        start = _rng(self.seed, slug, valence, "scenario-type").randrange(len(SCENARIO_TYPES))
        return SCENARIO_TYPES[(start + index) % len(SCENARIO_TYPES)]

    def scenario(self, slug: str, valence: str, index: int) -> Scenario:
        kind = self.scenario_type(slug, valence, index)
        messages = self._messages(
            "speech_scenario", eq_scale=eq_scale(slug), valence=valence, scenario_type=kind, variant=index + 1
        )
        reply = self.client.complete_json(
            messages, ScenarioReply, purpose=f"speech_scenario:{slug}:{valence}:{index}"
        ).value
        s1, s2 = reply.speaker1, reply.speaker2
        return Scenario(
            subscale=slug,
            valence=valence,
            scenario_type=kind,
            title=reply.title,
            context=reply.context,
            description=reply.description,
            speaker1=Speaker(name=s1.name, role=s1.role, gender=s1.gender, persona=s1.persona),
            speaker2=Speaker(name=s2.name, role=s2.role, gender=s2.gender, persona=s2.persona),
            resonant_persona=reply.resonant_persona,
            dissonant_personas=reply.dissonant_personas,
            skill_tested=reply.skill_tested,
            target_social_intent=reply.target_social_intent,
        )

    def dialogue(self, scenario: Scenario, rejected: Sequence[tuple[list[Line], str]] = ()) -> list[Line]:
        notes = ""
        if rejected:
            versions = []
            for number, (lines, reason) in enumerate(rejected, start=1):
                text = {line.turn: line.text for line in lines}
                versions.append(
                    self._render(
                        "speech_dialogue",
                        "rejected_version",
                        number=number,
                        turn4=text.get(4, ""),
                        turn6=text.get(6, ""),
                        reason=reason,
                    )
                )
            notes = self._render("speech_dialogue", "rejected_intro") + "\n" + "\n".join(versions)
        messages = self._messages("speech_dialogue", rejected=notes, **self._scenario_fields(scenario))
        reply = self.client.complete_json(
            messages, DialogueReply, purpose=f"speech_dialogue:{scenario.subscale}:{len(rejected) + 1}"
        ).value
        # a line of spaces only is kept as sent: the schema cannot portably say "not blank"
        return [Line(turn=line.turn, speaker=line.speaker, text=line.text.strip() or line.text) for line in reply.lines]

    def validate_dialogue(self, scenario: Scenario, lines: list[Line]) -> tuple[bool, str]:
        if self.validator is None:
            return True, NOT_CHECKED_NOTE
        messages = self._messages(
            "speech_dialogue_check", dialogue=dialogue_text(lines, scenario), **self._scenario_fields(scenario)
        )
        reply = self.validator.complete_json(
            messages, DialogueCheckReply, purpose=f"speech_dialogue_check:{scenario.subscale}"
        ).value
        return reply.plausible_both_tones, reply.note.strip()

    def _persona(self, scenario: Scenario, turn: int, persona_kind: str) -> str:
        fields = self._scenario_fields(scenario)
        if persona_kind == "context":
            if TURN_SPEAKER[turn] == 1:
                return self._render(
                    "speech_tone",
                    "persona_catalyst",
                    speaker_persona=scenario.speaker1.persona or "the catalyst",
                    **fields,
                )
            return self._render("speech_tone", "persona_subject", **fields)
        if persona_kind == "resonant":
            return self._render("speech_tone", "persona_resonant", **fields)
        if persona_kind.startswith("dissonant:"):
            archetype = persona_kind.split(":", 1)[1]
            if archetype not in self._voices:
                raise ValueError(f"'{archetype}' is not a failure archetype {list(FAILURE_ARCHETYPES)}")
            return self._render(
                "speech_tone",
                "persona_dissonant",
                archetype=archetype,
                archetype_voice=self._voices[archetype],
                **fields,
            )
        raise ValueError(f"persona kind '{persona_kind}' is not 'context', 'resonant' or 'dissonant:<archetype>'")

    def tone_instruction(
        self,
        scenario: Scenario,
        lines: list[Line],
        turn: int,
        persona_kind: str,
        attempt: int,
        rejected: list[tuple[str, str]],
    ) -> str:
        line = next(line for line in lines if line.turn == turn)
        speaker = scenario.speaker1 if line.speaker == 1 else scenario.speaker2
        arc = "arc_test" if turn in TEST_TURNS else "arc_peak" if turn in (3, 5) else "arc_opening"
        previous = ""
        if rejected:
            items = "\n".join(f'- "{text}" (rejected: {reason})' for text, reason in rejected)
            previous = self._render("speech_tone", "rejected", items=items)
        fields = self._scenario_fields(scenario)
        messages = self._messages(
            "speech_tone",
            dialogue=dialogue_text(lines, scenario),
            turn=turn,
            text=line.text,
            speaker_name=speaker.name,
            speaker_label=f"speaker {line.speaker}, {TURN_ROLE[turn]}",
            persona=self._persona(scenario, turn, persona_kind),
            arc=self._render("speech_tone", arc, **fields),
            rejected=previous,
            **fields,
        )
        reply = self.client.complete_text(
            messages, purpose=f"speech_tone:{scenario.subscale}:{turn}:{persona_kind}:{attempt}"
        )
        return _clean_instruction(reply.value)

    def select_tones(
        self, scenario: Scenario, lines: list[Line], turn: int, options: list[tuple[str, str]]
    ) -> tuple[int, int, str]:
        if self.judge is None:
            return templates.select_tones(options)
        # Options are shown in a seeded order, so the generator's order (resonant first) is not a hint.
        order = list(range(len(options)))
        _rng(self.seed, scenario.title, scenario.description, turn).shuffle(order)
        shown = "\n".join(f"{n}. {options[i][1]}" for n, i in enumerate(order, start=1))
        line = next(line for line in lines if line.turn == turn)
        messages = self._messages(
            "speech_tone_selection",
            dialogue=dialogue_text(lines, scenario),
            turn=turn,
            text=line.text,
            options=shown,
            **self._scenario_fields(scenario),
        )
        value = self.judge.complete_json(
            messages, tone_selection_schema(len(options)), purpose=f"speech_tone_selection:{scenario.subscale}:{turn}"
        ).value
        reply = cast(ToneSelection, value)  # mypy sees a BaseModel; the class made for n options has these fields
        key = ", ".join(f"{n} = {options[i][0]}" for n, i in enumerate(order, start=1))
        why = f"{reply.reasoning.strip()} [options shown: {key}]"
        return order[reply.resonant - 1], order[reply.dissonant - 1], why


__all__ = [
    "MAX_DIALOGUE_ATTEMPTS",
    "SAME_AS_GENERATOR",
    "TEMPLATE",
    "DialogueCheckReply",
    "DialogueReply",
    "LLMSpeechGenerator",
    "ScenarioReply",
    "SpeechGenerator",
    "TemplateGenerator",
    "speech_prompt_hash",
    "tone_selection_schema",
    "tone_slots",
]
