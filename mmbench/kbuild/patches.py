"""A patch series: read it, apply it to a source tree with GNU patch, and take it off again.

Accepted: plain unified diffs, ``git format-patch`` files, mbox files holding a whole series (one
patch per message, in order), and quilt-style series files (one patch path per line, relative
to the series file, ``#`` comments, an optional ``-pN``).  Each patch is known by its file name
(without ``.patch``/``.diff``; ``NAME/N`` for the N-th message of an mbox), its subject line (the
mail's ``Subject:`` without ``[PATCH ...]``, else the first line of the description) and the
sha256 of its text.  A patch that does not apply exactly (``--fuzz=0``: offsets are fine, a
changed context is not, as with ``git am``) is a UsageError naming the patch, the file and the
hunk; the patches applied before it are taken off again first.
"""

from __future__ import annotations

import email
import email.policy
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mmbench.errors import EnvironmentUnsupported, UsageError
from mmbench.model.userfile import read_user_file

MBOX_FROM = re.compile(rb"^From [0-9a-f]{40} ", re.M)
DIFF_START = re.compile(r"^(--- |diff --git |Index: )", re.M)
SUBJECT_TAG = re.compile(r"^\s*(\[[^\]]*\]\s*)+")


@dataclass(frozen=True)
class Patch:
    name: str  # the file's stem, or STEM/N for the N-th message of an mbox
    file: str  # the path it was read from, as given
    subject: str
    sha256: str
    text: bytes  # what GNU patch reads
    strip: int = 1  # -pN

    def record(self) -> dict[str, str]:
        """Provenance: what the run's fingerprint keeps of this patch."""
        return {"name": self.name, "file": Path(self.file).name, "subject": self.subject, "sha256": self.sha256}


def _stem(path: Path) -> str:
    name = path.name
    for ext in (".patch", ".diff", ".mbox", ".eml"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return name


def _plain_subject(text: str, fallback: str) -> str:
    """A quilt/plain patch's subject: a ``Subject:`` header, else the first description line."""
    head = DIFF_START.split(text, 1)[0]
    for line in head.splitlines():
        if line.lower().startswith("subject:"):
            return SUBJECT_TAG.sub("", line.split(":", 1)[1]).strip() or fallback
    for line in head.splitlines():
        if line.strip() and not line.startswith(("From:", "Date:", "From ", "Signed-off-by:")):
            return line.strip()[:120]
    return fallback


def _messages(raw: bytes) -> list[bytes]:
    """An mbox's messages (``git format-patch --stdout`` output: each starts with From <sha1>)."""
    starts = [m.start() for m in MBOX_FROM.finditer(raw)]
    if not starts:
        return [raw]
    return [raw[a:b] for a, b in zip(starts, starts[1:] + [len(raw)])]


def read_patch_file(path: Path, flag: str = "--patch", strip: int = 1) -> list[Patch]:
    """One file → its patches (several for an mbox series)."""
    raw = read_user_file(path, flag, "a patch")
    msgs = _messages(raw)
    out: list[Patch] = []
    for i, msg in enumerate(msgs, 1):
        text = msg.decode("utf-8", errors="replace")
        if len(msgs) > 1 or MBOX_FROM.match(msg):
            mail = email.message_from_bytes(msg, policy=email.policy.compat32)
            subject = SUBJECT_TAG.sub("", " ".join(str(mail.get("Subject", "")).split())).strip()
            body = mail.get_payload(decode=True)
            if isinstance(body, bytes):
                msg, text = body, body.decode("utf-8", errors="replace")
            subject = subject or _plain_subject(text, _stem(path))
        else:
            subject = _plain_subject(text, _stem(path))
        if not re.search(r"^@@ -[0-9]", text, re.M):
            where = f"{path} (message {i})" if len(msgs) > 1 else str(path)
            raise UsageError(f"{flag} {where}: no unified diff hunks in it (not a patch, or an empty one)")
        name = _stem(path) if len(msgs) == 1 else f"{_stem(path)}/{i}"
        out.append(Patch(name, str(path), subject, hashlib.sha256(msg).hexdigest(), msg, strip))
    return out


def read_series_file(path: Path) -> list[Patch]:
    """A quilt series file → its patches, in order (paths relative to the series file)."""
    try:
        text = path.read_text()
    except IsADirectoryError:
        raise UsageError(f"--series {path}: is a directory; give the series file inside it") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--series {path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    out: list[Patch] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        strip = 1
        for opt in parts[1:]:
            if re.fullmatch(r"-p[0-9]", opt):
                strip = int(opt[2:])
            else:
                raise UsageError(f"--series {path}:{n}: unknown option {opt!r} (only -pN is understood)")
        target = Path(parts[0])
        if not target.is_absolute():
            target = path.parent / target
        if not target.is_file():
            raise UsageError(f"--series {path}:{n}: {parts[0]}: no such patch file")
        out += read_patch_file(target, f"--series {path}:{n}:", strip)
    if not out:
        raise UsageError(f"--series {path}: lists no patches")
    return out


def read_series(items: list[tuple[str, str]]) -> list[Patch]:
    """``--patch``/``--series`` arguments in command-line order → the patches, in order."""
    out: list[Patch] = []
    for kind, value in items:
        path = Path(value).expanduser()
        out += read_series_file(path) if kind == "series" else read_patch_file(path)
    names = [p.name for p in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"--patch: {dup[0]} is given twice (each patch of a series once)")
    return out


def _patch_cmd(src: Path, p: Patch, *extra: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["patch", f"-p{p.strip}", "--batch", "--fuzz=0", "--no-backup-if-mismatch", "-d", str(src), *extra],
            input=p.text,
            capture_output=True,
        )
    except FileNotFoundError:
        raise EnvironmentUnsupported("building with patches needs GNU patch: scripts/setup.sh installs it") from None


def _failure(out: str) -> str:
    """GNU patch's output → 'FILE: hunk #N FAILED at L' (or what it said)."""
    file = ""
    problems: list[str] = []
    for line in out.splitlines():
        m = re.match(r"(?:checking|patching) file '?([^']+?)'?$", line.strip())
        if m:
            file = m.group(1)
            continue
        m = re.match(r"Hunk #([0-9]+) FAILED at ([0-9]+)", line.strip())
        if m:
            problems.append(f"{file}: hunk #{m.group(1)} FAILED at line {m.group(2)}")
        elif "can't find file to patch" in line:
            problems.append("a file it patches does not exist in this source")
        elif "Reversed (or previously applied) patch detected" in line:
            problems.append(f"{file}: already applied (or reversed)")
        elif line.startswith("patch: **** "):
            problems.append(line[len("patch: **** ") :].strip())
    if not problems:
        problems = [l.strip() for l in out.splitlines() if l.strip()][-1:] or ["patch failed"]
    shown = "; ".join(dict.fromkeys(problems))
    return shown if len(shown) < 300 else shown[:297] + "..."


def touched_files(p: Patch) -> list[str]:
    """The files a patch changes, creates or deletes, from its ---/+++ headers (paths with the
    patch's -pN applied)."""
    out: list[str] = []
    lines = p.text.decode("utf-8", errors="replace").splitlines()
    for old, new in zip(lines, lines[1:]):
        if not (old.startswith("--- ") and new.startswith("+++ ")):
            continue
        for header in (new, old):
            path = header[4:].split("\t", 1)[0].strip()
            if path != "/dev/null":
                parts = Path(path).parts[p.strip :]
                if parts:
                    out.append(str(Path(*parts)))
                break
    return list(dict.fromkeys(out))


FileTimes = dict[str, "tuple[int, int] | None"]


def file_times(src: Path, patches: list[Patch]) -> FileTimes:
    """Each touched file's (atime, mtime) in ns before the series, or None if it does not exist."""
    out: FileTimes = {}
    for p in patches:
        for rel in touched_files(p):
            if rel not in out:
                try:
                    st = os.stat(src / rel)
                    out[rel] = (st.st_atime_ns, st.st_mtime_ns)
                except OSError:
                    out[rel] = None
    return out


def restore_times(src: Path, times: FileTimes) -> None:
    """Give the files the series touched their times from before it again (after it came off)."""
    for rel, t in times.items():
        if t is not None:
            try:
                os.utime(src / rel, ns=t)
            except OSError:
                pass


def apply_series(
    src: Path, patches: list[Patch], source_name: str, on_applied: "callable[[list[Patch]], None] | None" = None
) -> list[Patch]:
    """Apply every patch in order; a patch that does not apply takes the earlier ones off again
    and raises a UsageError naming the patch, the file and the hunk."""
    applied: list[Patch] = []
    for i, p in enumerate(patches, 1):
        dry = _patch_cmd(src, p, "--dry-run", "--forward")
        if dry.returncode != 0:
            revert_series(src, applied)
            if on_applied:
                on_applied([])
            why = _failure(dry.stdout.decode(errors="replace") + dry.stderr.decode(errors="replace"))
            raise UsageError(
                f"--patch {p.file}: does not apply to {source_name} (patch {i} of {len(patches)}, {p.subject!r}): {why}"
            )
        if on_applied:  # journaled before the tree changes: a killed build is put back next time
            on_applied(applied + [p])
        real = _patch_cmd(src, p, "--forward")
        if real.returncode != 0:
            raise EnvironmentUnsupported(
                f"--patch {p.file}: applied in a dry run but not for real: "
                f"{_failure(real.stdout.decode(errors='replace'))}"
            )
        applied.append(p)
    return applied


def revert_series(src: Path, applied: list[Patch]) -> None:
    """Take ``applied`` off again, last first (the files get new times: restore_times puts the old
    ones back where no object tree was built from the patched files; kbuild/build.py)."""
    for p in reversed(applied):
        if (
            _patch_cmd(src, p, "--reverse", "--dry-run", "--force").returncode != 0
            and _patch_cmd(src, p, "--forward", "--dry-run").returncode == 0
        ):
            continue  # already off (a build stopped while taking its series off)
        proc = _patch_cmd(src, p, "--reverse", "--remove-empty-files")
        if proc.returncode != 0:
            raise EnvironmentUnsupported(
                f"cannot take patch {p.name} off {src} again: {_failure(proc.stdout.decode(errors='replace'))}"
            )
