"""Topology: recorded `nvidia-smi topo` outputs (tests/fixtures/topo/README.md says where each
shape was posted), NVML link queries, and the one-line interconnect header."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from spectui.agent.probe.topology import (
    host_topology,
    nvml_topology,
    parse_p2p_matrix,
    parse_topo_matrix,
    summarize,
)
from spectui.core.probe import interconnect_header

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "topo"


def load(name):
    return (FIXTURES / name).read_text()


def topology(parsed, name, *, gen=None, width=None, nvlinks=None, p2p=None):
    gpus = [{"index": g, "name": name, "pcie_gen_max": gen, "pcie_width_max": width, "nvlink_active": nvlinks}
            for g in parsed["gpus"]]
    return {"available": True, "gpus": gpus, "matrix": parsed["links"], "p2p": p2p}


def test_h100_nvswitch():
    t = parse_topo_matrix(load("h100-sxm-8gpu-nvswitch.txt"))
    assert t["gpus"] == list(range(8))
    assert t["links"][0] == ["X"] + ["NV18"] * 7 and t["links"][5][5] == "X"
    assert t["cpu_affinity"][0] == "0-47,96-143" and t["cpu_affinity"][7] == "48-95,144-191"
    assert t["numa_affinity"] == ["0"] * 4 + ["1"] * 4
    topo = topology(t, "NVIDIA H100 80GB HBM3", gen=5, width=16)
    ic = summarize(topo)
    assert (ic["kind"], ic["nvlink_links"], ic["nvswitch"], ic["worst_path"]) == ("nvlink", 18, True, None)
    topo["interconnect"] = ic
    assert interconnect_header(topo) == "8x H100 80GB HBM3, NVLink (18 links), NVSwitch"


def test_dgx_a100_with_nic_rows_and_nic_legend():
    t = parse_topo_matrix(load("dgx-a100-8gpu-nv12-nics.txt"))
    assert t["gpus"] == list(range(8))
    assert t["devices"] == ["NIC%d" % i for i in range(12)]
    assert all(t["links"][i][j] == ("X" if i == j else "NV12") for i in range(8) for j in range(8))
    assert t["numa_affinity"][0] == "3" and t["cpu_affinity"][4] == "112-127,240-255"
    ic = summarize(topology(t, "NVIDIA A100-SXM4-40GB"))
    assert (ic["kind"], ic["nvlink_links"], ic["nvswitch"]) == ("nvlink", 12, True)   # 7 x 12 links > 18


def test_dgx2_sixteen_gpus_nv6():
    t = parse_topo_matrix(load("dgx2-16gpu-nv6.txt"))
    assert t["gpus"] == list(range(16)) and t["links"][15][0] == "NV6"
    assert t["numa_affinity"][0] is None                    # this older layout has CPU Affinity only
    ic = summarize(topology(t, "Tesla V100-SXM3-32GB"))
    assert (ic["kind"], ic["nvlink_links"], ic["nvswitch"]) == ("nvlink", 6, True)   # 15 x 6 > 18
    # two of them alone: a pair cannot tell a switch from a bridge
    assert summarize(topology(t, "x"), [0, 1])["nvswitch"] is None


def test_eight_rtx4090_pcie_across_sockets():
    t = parse_topo_matrix(load("rtx4090-8gpu-pcie-sys.txt"))
    assert t["gpus"] == list(range(8)) and t["devices"] == ["NIC0", "NIC1"]
    assert set(c for row in t["links"] for c in row) == {"X", "SYS"}
    topo = topology(t, "NVIDIA GeForce RTX 4090", gen=4, width=16)
    topo["interconnect"] = summarize(topo)
    assert topo["interconnect"]["kind"] == "pcie" and topo["interconnect"]["worst_path"] == "SYS"
    assert interconnect_header(topo) == "8x GeForce RTX 4090, PCIe Gen4 x16, no NVLink, across CPU sockets"


def test_pcie_switches_2018_layout():
    t = parse_topo_matrix(load("pcie-8gpu-pix-pxb-sys-2018.txt"))
    assert t["devices"] == ["mlx5_0"]
    assert t["links"][0][:4] == ["X", "PIX", "PXB", "PXB"] and t["links"][0][4:] == ["SYS"] * 4
    assert t["cpu_affinity"][5] == "14-27"
    topo = topology(t, "NVIDIA RTX PRO 6000 Blackwell Server Edition", gen=5, width=16)
    assert summarize(topo, [0, 1])["worst_path"] == "PIX"
    assert summarize(topo, [0, 1, 2, 3])["worst_path"] == "PXB"
    topo["interconnect"] = summarize(topo, [0, 1, 2, 3])
    assert interconnect_header(topo) == "4x RTX PRO 6000 Blackwell Server Edition, PCIe Gen5 x16, no NVLink"


def test_phb_node_sys_subsets():
    t = parse_topo_matrix(load("pcie-5gpu-phb-node-sys.txt"))
    assert t["gpus"] == list(range(5)) and t["numa_affinity"] == ["1", "0", "0", "0", "0"]
    topo = topology(t, "NVIDIA GeForce RTX 4090")
    assert summarize(topo, [1, 2])["worst_path"] == "PHB"
    assert summarize(topo, [1, 2, 3, 4])["worst_path"] == "NODE"
    assert summarize(topo)["worst_path"] == "SYS"
    assert summarize(topo, [3, 4])["gpus"] == [3, 4]


def test_two_gpus_and_their_p2p_matrix():
    t = parse_topo_matrix(load("rtx5090-2gpu-phb.txt"))
    assert t["links"] == [["X", "PHB"], ["PHB", "X"]]
    p = parse_p2p_matrix(load("rtx5090-2gpu-p2p-r.txt"))
    assert p == {"gpus": [0, 1], "status": [["X", "GNS"], ["GNS", "X"]]}
    ic = summarize(topology(t, "NVIDIA GeForce RTX 5090", p2p=p["status"]))
    assert ic["kind"] == "pcie" and ic["p2p"] == "none"


def test_ansi_escapes_and_the_old_soc_name():
    text = ("\x1b[4m\tGPU0\tGPU1\tCPU Affinity\x1b[0m\n"
            "GPU0\t X \tSOC\t0-7\nGPU1\tSOC\t X \t8-15\n")
    assert parse_topo_matrix(text)["links"] == [["X", "SYS"], ["SYS", "X"]]


@pytest.mark.parametrize("text", ["", "No devices were found\n", "\tGPU0\tGPU1\nGPU0\t X \tQQQ\nGPU1\tQQQ\t X \n",
                                  "\tGPU0\tGPU1\nGPU0\t X \tPIX\n"])
def test_unreadable_outputs_are_refused(text):
    with pytest.raises(ValueError):
        parse_topo_matrix(text)


# --- NVML --------------------------------------------------------------------------------------
class FakeNvml(object):
    """pynvml's functions over a made-up machine: ``links[i]`` lists, per NVLink of GPU i, the
    bus id it ends at (another GPU's, or a switch's)."""

    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, names, links, switch=False, gen=(5, 5), width=(16, 16), ancestor=30, p2p=0, fail_init=None):
        self.names, self.links, self.switch = names, links, switch
        self.gen, self.width, self.ancestor, self.p2p, self.fail_init = gen, width, ancestor, p2p, fail_init
        self.shut = False

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError(self.fail_init)

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return len(self.names)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return self.names[h].encode()

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=b"00000000:%02X:00.0" % (0x10 + h))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        return 1  # idle GPUs drop their link speed

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        return self.width[0]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        return self.gen[1]

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        return self.width[1]

    def nvmlDeviceGetNvLinkState(self, h, link):
        if not self.links[h] and link >= 4:
            raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")
        return 1 if link < len(self.links[h]) else 0

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h, link):
        return 2 if self.switch else 0

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h, link):
        return SimpleNamespace(busId=self.links[h][link])

    def nvmlDeviceGetTopologyCommonAncestor(self, a, b):
        return self.ancestor

    def nvmlDeviceGetP2PStatus(self, a, b, index):
        return self.p2p


def bus(i):
    return "00000000:%02X:00.0" % (0x10 + i)


def test_nvml_bridged_pairs_on_pcie():
    # GPUs 0-1 and 2-3 joined by 4-link NVLink bridges, otherwise PCIe through the host bridge
    links = [[bus(1)] * 4, [bus(0)] * 4, [bus(3)] * 4, [bus(2)] * 4]
    nv = FakeNvml(["NVIDIA RTX A6000"] * 4, links, gen=(1, 4))
    t = nvml_topology(nv)
    assert t["matrix"][0] == ["X", "NV4", "PHB", "PHB"] and t["matrix"][3][2] == "NV4"
    assert t["p2p"][0][1] == "OK"
    g = t["gpus"][0]
    assert (g["pcie_gen"], g["pcie_gen_max"], g["pcie_width_max"], g["nvlink_active"], g["nvlink_to_switch"]) == \
        (1, 4, 16, 4, False)
    topo = dict(t, available=True)
    topo["interconnect"] = summarize(topo)
    assert topo["interconnect"]["kind"] == "mixed" and topo["interconnect"]["nvswitch"] is False
    assert interconnect_header(topo) == ("4x RTX A6000, NVLink between some GPUs (4 links), "
                                         "PCIe Gen4 x16 between others")
    topo["interconnect"] = summarize(topo, [0, 1])
    assert interconnect_header(topo) == "2x RTX A6000, NVLink (4 links)"


def test_nvml_nvswitch():
    links = [["00000000:C0:00.0"] * 18 for _ in range(8)]
    t = nvml_topology(FakeNvml(["NVIDIA H200"] * 8, links, switch=True))
    assert t["matrix"][0][7] == "NV18"
    topo = dict(t, available=True)
    topo["interconnect"] = summarize(topo)
    assert interconnect_header(topo) == "8x H200, NVLink (18 links), NVSwitch"


def test_host_topology_falls_back_to_nvidia_smi():
    outputs = {("nvidia-smi", "topo", "-m"): load("rtx5090-2gpu-phb.txt"),
               ("nvidia-smi", "topo", "-p2p", "r"): load("rtx5090-2gpu-p2p-r.txt")}
    nv = FakeNvml([], [], fail_init="NVML Shared Library Not Found")
    t = host_topology(pynvml_module=nv, run=lambda argv: outputs.get(tuple(argv)))
    assert t["available"] and t["sources"] == ["nvidia-smi topo -m", "nvidia-smi topo -p2p r"]
    assert t["interconnect"]["kind"] == "pcie" and t["interconnect"]["p2p"] == "none"
    assert "NVML did not initialise (NVML Shared Library Not Found)" in t["message"]


def test_host_topology_without_anything_says_what_is_missing():
    nv = FakeNvml([], [], fail_init="Driver Not Loaded")
    t = host_topology(pynvml_module=nv, run=lambda argv: None)
    assert not t["available"] and t["interconnect"] is None
    assert t["message"] == ("no GPU topology: NVML did not initialise (Driver Not Loaded); "
                            "nvidia-smi is not available")
    assert interconnect_header(t) is None


def test_header_of_the_simulated_host_and_mixed_names():
    topo = {"available": True, "gpus": [{"index": i, "name": "NVIDIA RTX PRO 6000 Blackwell"} for i in range(8)],
            "interconnect": {"gpus": list(range(8)), "kind": "pcie"}}
    assert interconnect_header(topo) == "8x RTX PRO 6000 Blackwell, PCIe, no NVLink"
    assert interconnect_header({"topology": topo}) == "8x RTX PRO 6000 Blackwell, PCIe, no NVLink"
    topo["gpus"][7]["name"] = "NVIDIA L40S"
    assert interconnect_header(topo).startswith("7x RTX PRO 6000 Blackwell + 1x L40S, PCIe")
