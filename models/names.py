"""Names people type, resolved to catalog names: GPUs, instance and machine types, models, zones.

- **GPUs**: the catalog name, or a common spelling (``H100``, ``h100-sxm5``, ``A100 80GB``) from
  :data:`GPU_ALIASES`. ``A100`` alone is ambiguous (40 or 80 GB) and is refused with both.
- **Instance and machine types** (:data:`INSTANCE_TYPES`): an AWS instance type, a GCP machine
  type or an Azure VM size names a GPU type *and* a node size — ``p5.48xlarge`` is 8 H100-SXM,
  ``a3-highgpu-8g`` 8 H100-SXM, ``Standard_ND96isr_H100_v5`` 8 H100-SXM. The figures are the
  providers' published instance specifications.
- **Models**: the catalog name, an alias the catalog entry lists (``aliases:``, e.g. its Hugging
  Face ids), or a Hugging Face id whose name, once its organisation, ``Meta-`` prefix and
  variant suffixes (``-Instruct``, ``-chat``, ``-hf``, ``-FP8``, ``-AWQ``, a ``-v0.1`` or
  ``-2407`` release tag) are dropped, is a catalog name (case and ``_``/``-`` ignored). A
  quantisation suffix also says the precision (:func:`precision_hint`).
- **AWS zone names** (``us-east-1a``) are per-account aliases of zone ids (``use1-az6``): the
  same name is a different data centre in another account. They resolve only through the JSON
  that ``aws ec2 describe-availability-zones`` prints for the account (:func:`read_zone_names`),
  never by guessing.

An unknown name is refused with the closest known names (:func:`~models.errors.did_you_mean`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from models.common import Precision
from models.errors import InputError, Problem, did_you_mean
from models.input_files import read_json

#: Common spellings of the catalog's GPU names, keyed by :func:`name_key`.
GPU_ALIASES: dict[str, str] = {
    "a10g": "A10G", "nvidiaa10g": "A10G",
    "l4": "L4", "nvidial4": "L4",
    "l40s": "L40S", "nvidial40s": "L40S",
    "a10040gb": "A100-40GB", "a100sxm440gb": "A100-40GB", "a10040g": "A100-40GB",
    "a10080gb": "A100-80GB", "a100sxm480gb": "A100-80GB", "a10080g": "A100-80GB",
    "h100": "H100-SXM", "h100sxm": "H100-SXM", "h100sxm5": "H100-SXM", "h10080gb": "H100-SXM",
    "h100sxm580gb": "H100-SXM", "h100mega": "H100-SXM", "nvidiah10080gbhbm3": "H100-SXM",
    "h100pcie": "H100-PCIe", "h100pcie80gb": "H100-PCIe",
    "h200": "H200", "h200141gb": "H200", "h200sxm": "H200",
    "b200": "B200",
    "mi300x": "MI300X", "amdinstinctmi300x": "MI300X",
}

#: Names that stand for more than one catalog GPU: refused, with the candidates.
AMBIGUOUS_GPUS: dict[str, tuple[str, ...]] = {
    "a100": ("A100-40GB", "A100-80GB"),
}


@dataclass(frozen=True)
class NodeShape:
    """What an instance or machine type is: a GPU type and how many of them one node has."""

    gpu: str
    gpus_per_node: int
    cloud: str
    accelerator: str
    """The accelerator's name in SkyPilot's catalog (GCP prices the GPUs in their own rows)."""


def _family(cloud: str, gpu: str, accelerator: str, sizes: Mapping[str, int]
            ) -> dict[str, NodeShape]:
    return {name: NodeShape(gpu, count, cloud, accelerator) for name, count in sizes.items()}


def _aws(prefix: str) -> dict[str, int]:
    """AWS g5/g6/g6e sizes: one GPU up to 16xlarge, four at 12xlarge and 24xlarge, eight at
    48xlarge."""
    ones = ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")
    sizes = {f"{prefix}.{s}": 1 for s in ones}
    sizes |= {f"{prefix}.12xlarge": 4, f"{prefix}.24xlarge": 4, f"{prefix}.48xlarge": 8}
    return sizes


#: Instance (AWS), machine (GCP) and VM (Azure) types with GPUs of the catalog, keyed by the
#: lower-cased name. Sources: the providers' instance pages (AWS EC2 accelerated computing
#: instance types; GCP accelerator-optimized machine family; Azure ND/NC-series sizes).
INSTANCE_TYPES: dict[str, NodeShape] = {
    **_family("aws", "A10G", "A10G", _aws("g5")),
    **_family("aws", "L4", "L4", _aws("g6")),
    **_family("aws", "L40S", "L40S", _aws("g6e")),
    **_family("aws", "A100-40GB", "A100", {"p4d.24xlarge": 8}),
    **_family("aws", "A100-80GB", "A100-80GB", {"p4de.24xlarge": 8}),
    **_family("aws", "H100-SXM", "H100", {"p5.48xlarge": 8, "p5.4xlarge": 1}),
    **_family("aws", "H200", "H200", {"p5e.48xlarge": 8, "p5en.48xlarge": 8}),
    **_family("aws", "B200", "B200", {"p6-b200.48xlarge": 8}),
    **_family("gcp", "A100-40GB", "A100", {"a2-highgpu-1g": 1, "a2-highgpu-2g": 2,
                                           "a2-highgpu-4g": 4, "a2-highgpu-8g": 8,
                                           "a2-megagpu-16g": 16}),
    **_family("gcp", "A100-80GB", "A100-80GB", {"a2-ultragpu-1g": 1, "a2-ultragpu-2g": 2,
                                                "a2-ultragpu-4g": 4, "a2-ultragpu-8g": 8}),
    **_family("gcp", "H100-SXM", "H100", {"a3-highgpu-1g": 1, "a3-highgpu-2g": 2,
                                          "a3-highgpu-4g": 4, "a3-highgpu-8g": 8,
                                          "a3-edgegpu-8g": 8}),
    **_family("gcp", "H100-SXM", "H100-MEGA", {"a3-megagpu-8g": 8}),
    **_family("gcp", "H200", "H200", {"a3-ultragpu-8g": 8}),
    **_family("gcp", "B200", "B200", {"a4-highgpu-8g": 8}),
    **_family("gcp", "L4", "L4", {"g2-standard-4": 1, "g2-standard-8": 1, "g2-standard-12": 1,
                                  "g2-standard-16": 1, "g2-standard-32": 1, "g2-standard-24": 2,
                                  "g2-standard-48": 4, "g2-standard-96": 8}),
    **_family("azure", "A100-80GB", "A100-80GB", {"standard_nc24ads_a100_v4": 1,
                                                  "standard_nc48ads_a100_v4": 2,
                                                  "standard_nc96ads_a100_v4": 4,
                                                  "standard_nd96amsr_a100_v4": 8}),
    **_family("azure", "A100-40GB", "A100", {"standard_nd96asr_v4": 8}),
    **_family("azure", "H100-SXM", "H100", {"standard_nd96isr_h100_v5": 8}),
    **_family("azure", "H200", "H200", {"standard_nd96isr_h200_v5": 8}),
    **_family("azure", "MI300X", "MI300X", {"standard_nd96isr_mi300x_v5": 8}),
}

#: Model-name suffixes that say how the weights are quantised (lower-case, at the end of the name).
PRECISION_SUFFIXES: tuple[tuple[str, Precision], ...] = (
    ("fp8-dynamic", Precision.fp8), ("fp8", Precision.fp8),
    ("w8a8", Precision.int8), ("int8", Precision.int8), ("w8a16", Precision.int8),
    ("awq-int4", Precision.int4), ("gptq-int4", Precision.int4), ("w4a16", Precision.int4),
    ("awq", Precision.int4), ("gptq", Precision.int4), ("int4", Precision.int4),
)
#: Variant suffixes that do not change the architecture (dropped before matching a model name).
VARIANT_SUFFIXES = ("instruct", "chat", "hf", "base", "it")
_RELEASE_TAG = re.compile(r"-(v\d+\.\d+|\d{4})$")
#: An AWS zone *name* (region + letter), e.g. ``us-east-1a``; zone ids look like ``use1-az1``.
AWS_ZONE_NAME = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d+[a-z]$")


def name_key(name: str) -> str:
    """Names compare ignoring case, spaces, ``-``, ``_`` and ``.``."""
    return "".join(c for c in name.lower() if c.isalnum())


def instance_shape(name: str) -> NodeShape | None:
    """The GPU type and node size of an instance/machine/VM type, or ``None`` if unknown."""
    key = name.strip().lower()
    shape = INSTANCE_TYPES.get(key) or INSTANCE_TYPES.get(f"standard_{key}")
    return shape


def resolve_gpu(name: str, catalog: Iterable[str]) -> tuple[str | None, int | None, str]:
    """``(catalog GPU, GPUs per node or None, why not)`` for a GPU name or an instance type.

    The catalog name wins, then a common spelling, then an instance/machine type (which also
    gives the node size). Unresolved: ``(None, None, reason with a fix)``.
    """
    known = list(catalog)
    by_key = {name_key(g): g for g in known}
    key = name_key(name)
    if key in by_key:
        return by_key[key], None, ""
    alias = GPU_ALIASES.get(key)
    if alias is not None and alias in known:
        return alias, None, ""
    shape = instance_shape(name)
    if shape is not None and shape.gpu in known:
        return shape.gpu, shape.gpus_per_node, ""
    if key in AMBIGUOUS_GPUS:
        options = [g for g in AMBIGUOUS_GPUS[key] if g in known]
        return None, None, ("ambiguous: did you mean " + " or ".join(f"`{g}`" for g in options)
                            + "?")
    target = alias or (shape.gpu if shape is not None else None)
    if target is not None:
        return None, None, f"it is a {target}, which the catalog does not have: add it"
    return None, None, _closest_gpu_or_instance_type(name, known)


def _closest_gpu_or_instance_type(name: str, known: Sequence[str]) -> str:
    """The fix for a name that is no GPU type nor instance type: the closest GPU types, and the
    closest instance types of those GPUs with what they hold (``p5.48xl`` → ``p5.48xlarge`` (8
    × H100-SXM)), as a GPU name gets the closest GPU names."""
    gpu_hint = did_you_mean(name, known)
    types = [t for t, shape in INSTANCE_TYPES.items() if shape.gpu in known]
    close = difflib.get_close_matches(name.strip().lower(), types, n=3, cutoff=0.6)
    if not close:
        return gpu_hint
    shown = " or ".join(f"`{t}` ({INSTANCE_TYPES[t].gpus_per_node} × {INSTANCE_TYPES[t].gpu})"
                        for t in close)
    if gpu_hint.startswith("did you mean "):
        return f"{gpu_hint[:-1]}, or the instance type {shown}?"
    gpus = gpu_hint.removeprefix("known names: ")
    return f"did you mean the instance type {shown}? (GPU types: {gpus})"


def _model_stem(name: str) -> str:
    stem = name.strip().split("/")[-1]
    stem = re.sub(r"^meta-", "", stem, flags=re.IGNORECASE)
    changed = True
    while changed:
        changed = False
        lowered = stem.lower()
        for suffix in (*(s for s, _ in PRECISION_SUFFIXES), *VARIANT_SUFFIXES):
            if lowered.endswith("-" + suffix):
                stem, changed = stem[: -len(suffix) - 1], True
                break
        else:
            tagged = _RELEASE_TAG.sub("", stem)
            if tagged != stem:
                stem, changed = tagged, True
    return stem


def resolve_model(name: str, catalog: Mapping[str, Sequence[str]]) -> tuple[str | None, str]:
    """``(catalog model, why not)`` for a model name or Hugging Face id.

    ``catalog`` maps each catalog model name to its declared aliases. Matching order: the name,
    a declared alias, then the Hugging Face id's stem (see the module docstring).
    """
    by_key: dict[str, str] = {}
    for model, aliases in catalog.items():
        for alias in aliases:
            by_key.setdefault(name_key(alias), model)
    for model in catalog:
        by_key[name_key(model)] = model
    for candidate in (name, _model_stem(name)):
        found = by_key.get(name_key(candidate))
        if found is not None:
            return found, ""
    return None, did_you_mean(_model_stem(name), list(catalog))


def precision_hint(model_name: str) -> Precision | None:
    """The precision a model name's quantisation suffix states (``-FP8`` → fp8), else ``None``."""
    stem = model_name.strip().split("/")[-1].lower()
    while True:
        for suffix, precision in PRECISION_SUFFIXES:
            if stem.endswith("-" + suffix):
                return precision
        for suffix in VARIANT_SUFFIXES:
            if stem.endswith("-" + suffix):
                stem = stem[: -len(suffix) - 1]
                break
        else:
            return None


@dataclass(frozen=True)
class ZoneName:
    """One AWS zone as an account sees it: the name it types, the zone id behind it."""

    name: str
    zone_id: str
    region: str


def read_zone_names(path: Path) -> dict[str, ZoneName]:
    """AWS zone names → zone ids, from ``aws ec2 describe-availability-zones --output json``.

    The document is ``{"AvailabilityZones": [{"ZoneName", "ZoneId", "RegionName", ...}]}``
    (as the CLI prints it; several regions' outputs may be merged into one list).
    """
    doc = read_json(path, "zone mapping")
    file = str(path)
    zones = doc.get("AvailabilityZones") if isinstance(doc, dict) else None
    if not isinstance(zones, list):
        raise InputError([Problem(file, "AvailabilityZones", "not the output of `aws ec2 "
                                  "describe-availability-zones`",
                                  "save `aws ec2 describe-availability-zones --output json` "
                                  "for each region you plan in")])
    out: dict[str, ZoneName] = {}
    problems: list[Problem] = []
    for i, entry in enumerate(zones):
        where = f"AvailabilityZones[{i}]"
        fields = {k: entry.get(k) if isinstance(entry, dict) else None
                  for k in ("ZoneName", "ZoneId", "RegionName")}
        missing = [k for k, v in fields.items() if not isinstance(v, str) or not v]
        if missing:
            fix = ("update the AWS CLI (ZoneId is printed since 2019) and save its output again"
                   if missing == ["ZoneId"] else "give the CLI's output unchanged")
            problems.append(Problem(file, where, f"missing {', '.join(missing)}", fix))
            continue
        name, zone_id, region = (str(fields[k]) for k in ("ZoneName", "ZoneId", "RegionName"))
        known = out.get(name)
        if known is not None and known.zone_id != zone_id:
            problems.append(Problem(file, f"{where}.ZoneName", f"`{name}` is listed as both "
                                    f"{known.zone_id} and {zone_id}",
                                    "give one account's output per file"))
        out[name] = ZoneName(name, zone_id, region)
    if problems:
        raise InputError(problems[:20])
    return out


def zone_id_for(name: str, mapping: Mapping[str, ZoneName] | None, known_ids: Iterable[str],
                file: str, where: str) -> tuple[str, str | None]:
    """``(zone id, the account's zone name or None)`` for a zone a person typed.

    A zone id passes through. An AWS zone name resolves through ``mapping`` only; without one
    (or when the mapping lacks it) the name is refused, never guessed.
    """
    if mapping is not None and name in mapping:
        return mapping[name].zone_id, name
    if AWS_ZONE_NAME.match(name) and name not in set(known_ids):
        fix = ("AWS zone names are per-account aliases of zone ids: give the scenario "
               "`zone_names: FILE` with the output of `aws ec2 describe-availability-zones "
               "--output json`, or use the zone id (e.g. use1-az1)")
        if mapping is not None:
            fix = f"the zone mapping has no `{name}`: save the output for that region too"
        raise InputError([Problem(file, where, f"`{name}` is an AWS zone name, not a zone id",
                                  fix)])
    return name, None


def mapped_names(mapping: Mapping[str, ZoneName] | None) -> dict[str, str]:
    """Zone id → the account's zone name, for showing both where a person reads them."""
    return {z.zone_id: z.name for z in (mapping or {}).values()}

