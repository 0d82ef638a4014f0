"""Progress events of a party for the launcher's bars: ``@@progress {json}`` lines."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any


def progress_printer(stream: Any = sys.stdout) -> Callable[[dict[str, Any]], None]:
    """Progress events as ``@@progress {json}`` lines for the launcher to render."""

    def emit(event: dict[str, Any]) -> None:
        stream.write("@@progress " + json.dumps(event) + "\n")
        stream.flush()

    return emit
