"""scripts/generate-client-models.py as a module (its file name is a command's, not an importable one)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
WIRE = ROOT / "kms_client" / "wire.py"
CALLS = ROOT / "kms_client" / "calls.py"


def model_generator() -> ModuleType:
    script = ROOT / "scripts" / "generate-client-models.py"
    spec = importlib.util.spec_from_file_location("generate_client_models", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
