"""A streamed OpenAI chat completion put back together: ``ChatStream`` adds up
``chat.completion.chunk`` objects into the one chat completion they make. The one
owner of that reassembly: the model client (``openai_chat.py``), the importer
(``importers/openai_shapes.py``) and the recording proxy (``capture/proxy.py``) all use
it, so a stream reads the same wherever it is met.

It follows the OpenAI SDK's accumulator (``openai/lib/streaming/_deltas.py``,
``accumulate_delta``): text, refusal and a tool call's arguments are concatenated, and
tool-call deltas are gathered by their ``index``. The SDK concatenates every string it
is sent; here fields that are no fragments keep one value, the last given: ``role``
(which some servers repeat in every chunk) and a call's ``id``. A call's ``name`` is
concatenated — a name split over chunks is joined — except a fragment equal to the
whole name so far, which repeats it: some OpenAI-compatible servers (OpenRouter, for
one) send the full name in every chunk of a call, which concatenated would name
``get_weatherget_weather``, a tool nobody offered. Such a name is kept once, and noted.

A delta without an ``index`` (servers that send each call whole in one chunk) belongs
to the call with its ``id`` when there is one, else starts a new call. What cannot be
read (a ``choices`` that is no list, a tool-call delta whose ``index`` is no integer, a
chunk with no ``choices`` and no usage that carries more than the completion's ids) is
skipped with a note, never fatal: callers decide what a bad stream is. Writer's
completions stream (chunks of ``{"value": text}``) is read as its text."""

from __future__ import annotations

from typing import Any

# where OpenAI-compatible servers put an answer's reasoning text (DeepSeek, vLLM, SGLang:
# "reasoning_content"; OpenRouter, Groq, Ollama's OpenAI API: "reasoning")
REASONING_KEYS = ("reasoning_content", "reasoning")
# what every chunk repeats about the completion, not a part of the answer
_HEAD_KEYS = frozenset({"id", "object", "created", "model", "service_tier",
                        "system_fingerprint", "usage", "obfuscation", "provider"})


class ChatStream:
    """``add`` each chunk (a parsed ``data:`` payload) in order, then ``completion``.

    ``head`` holds the last ``id``, ``model`` and ``created`` seen; ``text``, ``calls``
    and ``finish`` what choice 0 added up to so far; ``error`` the first error a chunk
    carried (the completion keeps it); ``other_choices`` the indices of the other
    choices chunks carried (left out); ``chunks`` how many were added."""

    def __init__(self) -> None:
        self.head: dict[str, Any] = {}
        self.usage: dict[str, Any] | None = None
        self.role = "assistant"
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.reasoning: dict[str, list[str]] = {}  # by the key it came under
        self.thinking = 0  # content parts of the model's reasoning (not kept)
        self.audio_id: str | None = None  # an answer given as audio: its id and transcript
        self.transcript: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.chunks = 0
        self.other_choices: set[str] = set()
        self._skipped: list[str] = []
        self._repeats: dict[int, int] = {}  # call index -> chunks that sent its whole name
        self._unread: dict[str, int] = {}  # keys of chunks with nothing read -> how many
        self.error: Any = None  # an error a chunk carried (OpenRouter's, mid-stream)
        self.cited = 0  # citations streamed (annotations, Perplexity's citations): not kept

    def add(self, chunk: dict[str, Any]) -> None:
        self.chunks += 1
        self.head.update({k: chunk[k] for k in ("id", "model", "created")
                          if chunk.get(k) is not None})
        usage, groq = chunk.get("usage"), chunk.get("x_groq")
        if not isinstance(usage, dict) and isinstance(groq, dict):
            usage = groq.get("usage")  # Groq puts a stream's usage in its extension
        if isinstance(usage, dict):
            self.usage = usage
        if chunk.get("error") and self.error is None:  # (the server gave up mid-stream)
            self.error = chunk["error"]
        for key in ("citations", "search_results"):  # (Perplexity's, on every chunk)
            if isinstance(chunk.get(key), list):
                self.cited = max(self.cited, len(chunk[key]))
        choices = chunk.get("choices")
        if choices is None and isinstance(chunk.get("value"), str):
            self.text.append(chunk["value"])  # Writer's completions stream: {"value": …}
            return
        if choices is None and not isinstance(usage, dict):
            # nothing here is read: said when the chunk carries more than its head
            # (some streams send chunks of ids alone, an audio stream's sanitised parts)
            if other := sorted(map(str, set(chunk) - _HEAD_KEYS)):
                keys = ", ".join(other[:6])
                self._unread[keys] = self._unread.get(keys, 0) + 1
            return
        if choices is not None and not isinstance(choices, list):
            self._skipped.append(f"stream chunk's choices is a {type(choices).__name__}, "
                                 "not a list: skipped")
            return
        for choice in choices or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                self.other_choices.add(str(choice.get("index")) if isinstance(choice, dict)
                                       else repr(choice))
                continue
            self._add_choice(choice)

    def _add_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            delta = {}
        if isinstance(delta.get("role"), str) and delta["role"]:
            self.role = delta["role"]
        if isinstance(delta.get("annotations"), list):  # (OpenRouter's url_citation)
            self.cited += len(delta["annotations"])
        if isinstance(delta.get("content"), str):
            self.text.append(delta["content"])
        elif isinstance(delta.get("content"), list):  # (Mistral's: typed parts)
            for part in delta["content"]:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text" and isinstance(part.get("text"), str):
                    self.text.append(part["text"])
                elif kind in ("thinking", "reasoning"):
                    self.thinking += 1
                else:
                    self._skipped.append(f"stream content part not understood, skipped: "
                                         f"{str(part)[:80]}")
        elif isinstance(choice.get("text"), str):  # a legacy completions stream
            self.text.append(choice["text"])
        if isinstance(delta.get("refusal"), str):
            self.refusal.append(delta["refusal"])
        for key in REASONING_KEYS:
            if isinstance(delta.get(key), str):
                self.reasoning.setdefault(key, []).append(delta[key])
        audio = delta.get("audio")
        if isinstance(audio, dict):  # (its base64 data is not kept)
            if isinstance(audio.get("id"), str) and self.audio_id is None:
                self.audio_id = audio["id"]
            if isinstance(audio.get("transcript"), str):
                self.transcript.append(audio["transcript"])
        calls = delta.get("tool_calls")
        for tc in calls if isinstance(calls, list) else []:
            self._add_call(tc)
        if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
            self.finish = choice["finish_reason"]

    def _add_call(self, tc: Any) -> None:
        index = self._index(tc)
        if index is None:
            self._skipped.append(f"stream tool-call delta not understood, skipped: "
                                 f"{str(tc)[:80]}")
            return
        call = self.calls.setdefault(index, {"type": "function",
                                             "function": {"name": "", "arguments": ""}})
        if isinstance(tc.get("id"), str) and tc["id"]:
            call["id"] = tc["id"]
        fn = tc.get("function")
        if not isinstance(fn, dict):
            return
        name, so_far = fn.get("name"), call["function"]["name"]
        if isinstance(name, str) and name:
            if name == so_far:  # the whole name again, not its next part
                self._repeats[index] = self._repeats.get(index, 1) + 1
            else:
                call["function"]["name"] = so_far + name
        if isinstance(fn.get("arguments"), str):
            call["function"]["arguments"] += fn["arguments"]

    def _index(self, tc: Any) -> int | None:
        """The call a tool-call delta adds to (None: a delta not understood)."""
        if not isinstance(tc, dict):
            return None
        if "index" not in tc:
            cid = tc.get("id")
            if isinstance(cid, str) and cid:
                for i, call in self.calls.items():
                    if call.get("id") == cid:
                        return i
            return max(self.calls, default=-1) + 1
        index = tc["index"]
        return None if isinstance(index, bool) or not isinstance(index, int) else index

    def notes(self) -> list[str]:
        """What was skipped, and each call whose name came whole more than once."""
        said = [f"the model's reasoning ({self.thinking} streamed thinking part(s)) not "
                "imported"] if self.thinking else []
        if self.cited:
            said.append(f"the answer's citations ({self.cited}: sources it cites) not "
                        "imported")
        unread = [f"{n} stream chunk(s) with no choices skipped (keys: {keys})"
                  for keys, n in self._unread.items()]
        return self._skipped + unread + said + [
            f"streamed tool call {i} sent its whole name {self.calls[i]['function']['name']!r} "
            f"in {n} chunks: kept once (concatenated it would be "
            f"{self.calls[i]['function']['name'] * n!r})"
            for i, n in sorted(self._repeats.items())]

    def completion(self) -> dict[str, Any]:
        """The chat completion the chunks add up to (choice 0)."""
        message: dict[str, Any] = {"role": self.role, "content": "".join(self.text) or None}
        if "".join(self.refusal):
            message["refusal"] = "".join(self.refusal)
        message.update({k: "".join(v) for k, v in self.reasoning.items() if "".join(v)})
        if self.audio_id is not None or "".join(self.transcript):
            message["audio"] = {k: v for k, v in (("id", self.audio_id),
                                                  ("transcript", "".join(self.transcript)))
                                if v}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        out: dict[str, Any] = {**self.head, "choices": [
            {"index": 0, "message": message, "finish_reason": self.finish}]}
        if self.usage is not None:
            out["usage"] = self.usage
        if self.error is not None:
            out["error"] = self.error
        return out
