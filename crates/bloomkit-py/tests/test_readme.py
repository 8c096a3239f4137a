"""The README's Python section runs as written: its Python blocks in order, in one namespace,
and its shell lines (but the install, which scripts/test.sh runs in a new virtual
environment before these tests) with the real `bloomkit` binary first on PATH."""

import os
import re
import subprocess
from pathlib import Path

from conftest import ROOT


def blocks():
    """The fenced blocks of the README's "From Python" section: (language, code)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## From Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def test_the_readme_python_section_runs(cli, tmp_path, monkeypatch):
    found = blocks()
    assert [lang for lang, _ in found].count("python") >= 3
    assert found[0] == ("sh", found[0][1]) and "pip install ./crates/bloomkit-py" in found[0][1]
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=f"{Path(cli).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    namespace = {}
    for lang, code in found:
        if lang == "python":
            exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
        elif lang == "sh":
            for line in code.splitlines():
                if line.strip() and not line.startswith("pip install"):
                    subprocess.run(["bash", "-c", line], check=True, env=env)
    # What the last block wrote is what the CLI reads.
    out = subprocess.run([cli, "query", "users.bkf", "carol", "alice"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["maybe\tcarol", "maybe\talice"]
