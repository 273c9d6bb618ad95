"""GPU topology for the verify-cost probe: which GPUs, how they are linked, who can reach whom.

Three sources, each optional on a host:

* ``nvidia-smi topo -m``: the link matrix (``NV#`` = a bonded set of # NVLinks, else the PCIe
  path: ``PIX`` at most one PCIe bridge, ``PXB`` several bridges, ``PHB`` through a host bridge,
  ``NODE`` between host bridges of one NUMA node, ``SYS`` across the inter-socket link;
  ``SOC`` is an old name of ``SYS``), parsed by :func:`parse_topo_matrix`;
* ``nvidia-smi topo -p2p r``: the peer-to-peer read matrix (``OK``, ``NS``, ``GNS``, ``CNS``,
  ``TNS``, ``DR``, ``U``), parsed by :func:`parse_p2p_matrix`;
* NVML (pynvml): names, PCIe generation and width (current and maximum), active NVLinks and
  whether they end at an NVSwitch, the P2P status of each pair (:func:`nvml_topology`).

:func:`summarize` reduces what was found, for the GPUs a profile uses, to the interconnect:
``nvlink`` (every pair over NVLink), ``pcie`` (no pair over NVLink) or ``mixed``.
"""

from __future__ import annotations

import re
import subprocess

# An NVLink-capable GPU has at most this many links (H100: 18; A100: 12).
NVLINK_MAX_LINKS = 18
# PCIe path kinds from nearest to farthest, as nvidia-smi's legend orders them.
PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
_ALIASES = {"SOC": "SYS"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_GPU = re.compile(r"^GPU(\d+)$")
_NV = re.compile(r"^NV(\d+)$")

# NVML constants (values from nvml.h), so a partial pynvml still works.
_NVML_P2P_CAPS_INDEX_READ = 0
_NVML_P2P_STATUS = {0: "OK", 1: "CNS", 2: "GNS", 3: "DR", 4: "NS", 5: "TNS", 6: "U"}
_NVML_TOPOLOGY = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_NVML_NVLINK_DEVICE_TYPE_SWITCH = 2


def _lines(text):
    return [_ANSI.sub("", line).rstrip() for line in text.splitlines()]


def _norm(cell):
    cell = cell.strip()
    return _ALIASES.get(cell, cell)


def _header_and_rows(text):
    """The header's device columns and each GPU row's cells (after the row name)."""
    header = None
    rows = {}
    for line in _lines(text):
        tokens = line.split()
        if not tokens:
            continue
        if header is None and _GPU.match(tokens[0]) and not line[:1].strip():
            # the header is indented and starts with GPU0; device columns end where the
            # affinity columns ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") begin
            cols = []
            for t in tokens:
                if t in ("CPU", "NUMA", "Affinity") or (t == "GPU" and cols):
                    break
                cols.append(t)
            header = cols
            continue
        if header is not None:
            if tokens[0] in ("Legend:", "NIC"):
                break
            m = _GPU.match(tokens[0])
            if m:
                rows[int(m.group(1))] = tokens[1:]
    return header, rows


def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m``: GPU indices, the GPU-to-GPU link labels, affinities.

    Returns ``{"gpus": [0, 1, ...], "links": [[label, ...], ...], "cpu_affinity": [...],
    "numa_affinity": [...], "devices": [other columns such as NIC0 or mlx5_0]}``; a label is
    ``"X"`` on the diagonal, ``"NV18"`` or a PCIe path kind elsewhere. Raises ValueError when
    the text holds no GPU matrix.
    """
    header, rows = _header_and_rows(text)
    if not header or not rows:
        raise ValueError("no GPU matrix in this nvidia-smi topo -m output")
    gpu_cols = [int(_GPU.match(c).group(1)) for c in header if _GPU.match(c)]
    devices = [c for c in header if not _GPU.match(c)]
    gpus = sorted(rows)
    if gpus != sorted(gpu_cols):
        raise ValueError("the GPU rows (%s) do not match the GPU columns (%s)" % (gpus, sorted(gpu_cols)))
    links, cpu_aff, numa_aff = [], [], []
    for g in gpus:
        cells = rows[g]
        if len(cells) < len(header):
            raise ValueError("the row of GPU%d has %d cells for %d columns" % (g, len(cells), len(header)))
        by_col = dict(zip(header, cells))
        links.append([_norm(by_col["GPU%d" % c]) for c in gpus])
        rest = cells[len(header):]
        cpu_aff.append(rest[0] if len(rest) > 0 else None)
        numa_aff.append(rest[1] if len(rest) > 1 and rest[1] != "N/A" else None)
    for i, row in enumerate(links):
        if row[i] != "X":
            raise ValueError("GPU%d's own cell is %r, not X" % (gpus[i], row[i]))
        for j, label in enumerate(row):
            if i != j and not (_NV.match(label) or label in PCIE_PATHS):
                raise ValueError("unknown link %r between GPU%d and GPU%d" % (label, gpus[i], gpus[j]))
    return {"gpus": gpus, "links": links, "cpu_affinity": cpu_aff, "numa_affinity": numa_aff,
            "devices": devices}


def parse_p2p_matrix(text):
    """Parse ``nvidia-smi topo -p2p r`` (or ``rw``...): ``{"gpus": [...], "status": [[...]]}``."""
    header, rows = _header_and_rows(text)
    if not header or not rows:
        raise ValueError("no GPU matrix in this nvidia-smi topo -p2p output")
    gpus = sorted(rows)
    status = []
    for g in gpus:
        by_col = dict(zip(header, rows[g]))
        status.append([by_col.get("GPU%d" % c, "U") for c in gpus])
    return {"gpus": gpus, "status": status}


def nv_links(label):
    """The NVLink count of a link label (``NV12`` -> 12), or 0 for a PCIe path."""
    m = _NV.match(label or "")
    return int(m.group(1)) if m else 0


def summarize(topology, selected=None):
    """The interconnect among ``selected`` GPUs (all when None).

    ``kind``: ``nvlink`` / ``pcie`` / ``mixed``; ``nvlink_links``: the smallest NVLink count
    between two of them (``NV#`` of the matrix, else active links per GPU from NVML);
    ``nvswitch``: True when NVML says the links end at a switch, or when a GPU's NVLinks to its
    peers add up to more than a GPU has (each pair then shares one GPU's links: a switch),
    None when unknown; ``worst_path``: the farthest PCIe path between two of them;
    ``pcie_gen`` / ``pcie_width``: the lowest maximum link generation and width among them;
    ``p2p``: ``all`` / ``some`` / ``none`` pairs with peer-to-peer reads, or None.
    """
    gpus = topology.get("gpus") or []
    index = [g["index"] for g in gpus]
    sel = [i for i in (selected if selected is not None else index) if i in index]
    pos = dict((g, k) for k, g in enumerate(index))
    matrix = topology.get("matrix")
    pairs = [(a, b) for n, a in enumerate(sel) for b in sel[n + 1:]]
    out = {"gpus": sel, "kind": None, "nvlink_links": None, "nvswitch": None, "worst_path": None,
           "pcie_gen": None, "pcie_width": None, "p2p": None}
    info = [gpus[pos[i]] for i in sel]
    if matrix and pairs:
        labels = [matrix[pos[a]][pos[b]] for a, b in pairs]
        nvs = [nv_links(l) for l in labels]
        paths = [l for l in labels if not nv_links(l)]
        out["kind"] = "nvlink" if all(nvs) else ("pcie" if not any(nvs) else "mixed")
        if any(nvs):
            out["nvlink_links"] = min(n for n in nvs if n)
        if paths:
            out["worst_path"] = max(paths, key=lambda p: PCIE_PATHS.index(p) if p in PCIE_PATHS else -1)
        if out["kind"] == "nvlink" and len(sel) > 2:
            per_gpu = max(sum(nv_links(matrix[pos[a]][pos[b]]) for b in sel if b != a) for a in sel)
            out["nvswitch"] = per_gpu > NVLINK_MAX_LINKS
    elif info and all(g.get("nvlink_active") is not None for g in info):
        active = [g["nvlink_active"] for g in info]
        out["kind"] = "nvlink" if all(active) else ("pcie" if not any(active) else "mixed")
        if any(active):
            out["nvlink_links"] = min(a for a in active if a)
    elif len(sel) == 1 and info:
        out["kind"] = "nvlink" if info[0].get("nvlink_active") else "pcie"
    switch = [g.get("nvlink_to_switch") for g in info if g.get("nvlink_active")]
    if switch and all(s is not None for s in switch):
        out["nvswitch"] = all(switch)
    gens = [g.get("pcie_gen_max") or g.get("pcie_gen") for g in info]
    widths = [g.get("pcie_width_max") or g.get("pcie_width") for g in info]
    if gens and all(gens):
        out["pcie_gen"] = min(gens)
    if widths and all(widths):
        out["pcie_width"] = min(widths)
    p2p = topology.get("p2p")
    if p2p and pairs:
        ok = [p2p[pos[a]][pos[b]] == "OK" for a, b in pairs]
        out["p2p"] = "all" if all(ok) else ("none" if not any(ok) else "some")
    return out


# --- NVML -------------------------------------------------------------------------------------
def _text(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None


def _bus_id(nv, h):
    pci = _try(nv.nvmlDeviceGetPciInfo, h)
    bus = _text(getattr(pci, "busId", None)) if pci is not None else None
    return bus.lower().lstrip("0") if bus else None


def nvml_topology(nv):
    """Topology from an initialised pynvml module ``nv`` (the caller inits and shuts down)."""
    count = nv.nvmlDeviceGetCount()
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    buses = [_bus_id(nv, h) for h in handles]
    max_links = getattr(nv, "NVML_NVLINK_MAX_LINKS", NVLINK_MAX_LINKS)
    gpus, pair_links = [], [[0] * count for _ in range(count)]
    for i, h in enumerate(handles):
        name = _try(nv.nvmlDeviceGetName, h)
        d = {"index": i, "name": _text(name) if name is not None else None,
             "pcie_gen": _try(nv.nvmlDeviceGetCurrPcieLinkGeneration, h),
             "pcie_width": _try(nv.nvmlDeviceGetCurrPcieLinkWidth, h),
             "pcie_gen_max": _try(nv.nvmlDeviceGetMaxPcieLinkGeneration, h),
             "pcie_width_max": _try(nv.nvmlDeviceGetMaxPcieLinkWidth, h),
             "nvlink_active": None, "nvlink_to_switch": None}
        active, to_switch, known = 0, [], False
        for link in range(max_links):
            state = _try(nv.nvmlDeviceGetNvLinkState, h, link)
            if state is None:
                continue
            known = True
            if not state:
                continue
            active += 1
            kind = None
            if hasattr(nv, "nvmlDeviceGetNvLinkRemoteDeviceType"):
                kind = _try(nv.nvmlDeviceGetNvLinkRemoteDeviceType, h, link)
            if kind is not None:
                to_switch.append(kind == _NVML_NVLINK_DEVICE_TYPE_SWITCH)
            remote = _try(nv.nvmlDeviceGetNvLinkRemotePciInfo, h, link)
            rbus = _text(getattr(remote, "busId", None)) if remote is not None else None
            if rbus and rbus.lower().lstrip("0") in buses:
                pair_links[i][buses.index(rbus.lower().lstrip("0"))] += 1
        if known:
            d["nvlink_active"] = active
        if to_switch:
            d["nvlink_to_switch"] = all(to_switch)
        gpus.append(d)
    matrix, p2p = [], []
    for i, a in enumerate(handles):
        mrow, prow = [], []
        for j, b in enumerate(handles):
            if i == j:
                mrow.append("X")
                prow.append("X")
                continue
            if gpus[i].get("nvlink_to_switch") and gpus[j].get("nvlink_to_switch"):
                mrow.append("NV%d" % min(gpus[i]["nvlink_active"], gpus[j]["nvlink_active"]))
            elif pair_links[i][j]:
                mrow.append("NV%d" % pair_links[i][j])
            else:
                level = _try(nv.nvmlDeviceGetTopologyCommonAncestor, a, b)
                mrow.append(_NVML_TOPOLOGY.get(level))
            status = _try(nv.nvmlDeviceGetP2PStatus, a, b,
                          getattr(nv, "NVML_P2P_CAPS_INDEX_READ", _NVML_P2P_CAPS_INDEX_READ))
            prow.append(_NVML_P2P_STATUS.get(status, "U") if status is not None else None)
        matrix.append(mrow)
        p2p.append(prow)
    if any(None in row for row in matrix):
        matrix = None
    if any(None in row for row in p2p):
        p2p = None
    return {"gpus": gpus, "matrix": matrix, "p2p": p2p}


def _run(argv, timeout=20):
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None


def host_topology(selected=None, pynvml_module=None, run=_run):
    """Everything this host tells about its GPUs' links, with what was missing in words."""
    topo = {"available": False, "sources": [], "gpus": [], "matrix": None, "p2p": None, "message": None}
    missing = []
    nv = pynvml_module
    if nv is None:
        try:
            import pynvml as nv  # from nvidia-ml-py
        except ImportError:
            nv = None
            missing.append("pynvml is not installed (pip install nvidia-ml-py)")
    if nv is not None:
        try:
            nv.nvmlInit()
        except Exception as exc:
            missing.append("NVML did not initialise (%s)" % (exc,))
        else:
            try:
                found = nvml_topology(nv)
                topo.update(gpus=found["gpus"], matrix=found["matrix"], p2p=found["p2p"])
                topo["sources"].append("nvml")
            except Exception as exc:
                missing.append("NVML failed (%s)" % (exc,))
            finally:
                _try(nv.nvmlShutdown)
    text = run(["nvidia-smi", "topo", "-m"])
    if text:
        try:
            parsed = parse_topo_matrix(text)
        except ValueError as exc:
            missing.append("nvidia-smi topo -m was unreadable (%s)" % exc)
        else:
            topo["sources"].append("nvidia-smi topo -m")
            topo["matrix"] = parsed["links"]
            topo["numa_affinity"] = parsed["numa_affinity"]
            if not topo["gpus"]:
                topo["gpus"] = [{"index": g, "name": None} for g in parsed["gpus"]]
    elif not topo["gpus"]:
        missing.append("nvidia-smi is not available")
    if topo["gpus"] and topo["p2p"] is None:
        text = run(["nvidia-smi", "topo", "-p2p", "r"])
        if text:
            try:
                topo["p2p"] = parse_p2p_matrix(text)["status"]
                topo["sources"].append("nvidia-smi topo -p2p r")
            except ValueError:
                pass
    if topo["matrix"] is not None and len(topo["matrix"]) != len(topo["gpus"]):
        topo["matrix"] = None
    topo["available"] = bool(topo["gpus"])
    if not topo["available"]:
        topo["message"] = "no GPU topology: " + "; ".join(missing or ["no NVIDIA GPU found"])
    elif missing:
        topo["message"] = "; ".join(missing)
    topo["interconnect"] = summarize(topo, selected) if topo["available"] else None
    return topo
