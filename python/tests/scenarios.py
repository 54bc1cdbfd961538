"""The repository's scenario files and shipped exports that the tests use."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AURORA = REPO / "configs" / "aurora-env.yaml"
MOCC = REPO / "configs" / "scenarios" / "mocc-env.yaml"
SHARED = REPO / "configs" / "scenarios" / "shared-link.yaml"
LATECOMER = REPO / "configs" / "scenarios" / "latecomer.yaml"
BESIDE_CUBIC = REPO / "configs" / "scenarios" / "beside-cubic.yaml"
AURORA_EXPORT = REPO / "checkpoints" / "aurora"
MOCC_EXPORT = REPO / "checkpoints" / "mocc-omega36"
PAIR_EXPORT = REPO / "checkpoints" / "mocc-pair"
