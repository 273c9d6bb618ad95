"""The interconnect in one line, for the dashboard header and the probe's output.

``8x RTX PRO 6000 Blackwell, PCIe Gen5 x16, no NVLink`` or
``8x H100 80GB HBM3, NVLink (18 links), NVSwitch``; what the host did not tell is left out
(``8x RTX PRO 6000 Blackwell, PCIe, no NVLink`` on the simulated host, which models no PCIe
generation). A probe across nodes names the GPUs of one node and how the nodes are linked:
``8x RTX PRO 6000 Blackwell per node, PCIe, no NVLink, 2 nodes over 100 GbE``.
"""

from __future__ import annotations

from collections import Counter


def short_gpu_name(name: str | None) -> str:
    if not name:
        return "GPU"
    for prefix in ("NVIDIA ", "Nvidia "):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def _gpus_part(topology: dict, selected: list[int] | None) -> str | None:
    gpus = topology.get("gpus") or []
    if selected is not None:
        gpus = [g for g in gpus if g.get("index") in selected]
    if not gpus:
        return None
    counts = Counter(short_gpu_name(g.get("name")) for g in gpus)
    return " + ".join(f"{n}x {name}" for name, n in counts.most_common())


def _pcie(ic: dict) -> str:
    text = "PCIe"
    if ic.get("pcie_gen"):
        text += f" Gen{ic['pcie_gen']}"
    if ic.get("pcie_width"):
        text += f" x{ic['pcie_width']}"
    return text


def interconnect_header(topology: dict | None) -> str | None:
    """One line naming the GPUs and how they are linked, or None without a topology.

    ``topology`` is a probe result's ``topology`` (or the whole result).
    """
    if topology and "topology" in topology and "gpus" not in topology:
        topology = topology["topology"]
    if not topology or not topology.get("available"):
        return None
    ic = topology.get("interconnect") or {}
    selected = ic.get("gpus") or None
    parts = [_gpus_part(topology, selected)]
    kind = ic.get("kind")
    if kind == "nvlink":
        links = f" ({ic['nvlink_links']} links)" if ic.get("nvlink_links") else ""
        parts.append(f"NVLink{links}")
        if ic.get("nvswitch"):
            parts.append("NVSwitch")
    elif kind == "pcie":
        parts += [_pcie(ic), "no NVLink"]
    elif kind == "mixed":
        links = f" ({ic['nvlink_links']} links)" if ic.get("nvlink_links") else ""
        parts.append(f"NVLink between some GPUs{links}, {_pcie(ic)} between others")
    if kind in ("pcie", "mixed") and ic.get("worst_path") == "SYS":
        parts.append("across CPU sockets")
    nodes = int(ic.get("nodes") or 1)
    if nodes > 1:
        if parts[0]:
            parts[0] += " per node"
        parts.append(f"{nodes} nodes" + (f" over {ic['network']}" if ic.get("network") else ""))
    return ", ".join(p for p in parts if p)
