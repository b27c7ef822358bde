"""tensorboard_torch.py PYENV DIR — PyTorch's SummaryWriter makes the calls
tests/shell/tensorboard_write.lua makes (into DIR/torch, DIR/torch_purge), then
ember's records (DIR/ember, DIR/ember_purge) are compared with PyTorch's, as
TAP: byte for byte where both are deterministic, field by field where they
cannot be (PNG bytes: PIL filters rows, ember does not; hparams: no walltime
parameter, and protobuf map order). Run with a Python that has torch: PyTorch
2.x's environment (scripts/bench/torch-python) or Debian's python3 (1.13), the
same records from both; the tensorboard package (PyTorch's writer needs it)
comes from the venv PYENV, appended to the path so the numpy torch was built
with stays first."""
import glob
import io
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402

sys.path.extend(glob.glob(os.path.join(sys.argv[1], "lib", "python3*", "site-packages")))
import torch  # noqa: E402
from torch.utils.tensorboard import SummaryWriter  # noqa: E402
from tensorboard.compat.proto import event_pb2  # noqa: E402
from tensorboard.plugins.hparams import plugin_data_pb2  # noqa: E402
from PIL import Image  # noqa: E402
import numpy  # noqa: E402
import torch.utils.tensorboard.summary as torch_summary  # noqa: E402


print("# PyTorch %s" % torch.__version__)


class _Numpy:
    """numpy for PyTorch 1.13's make_histogram, whose np.greater(counts, 0,
    dtype=np.int32) newer numpy refuses: the comparison, then the cast."""
    def __getattr__(self, name):
        return getattr(numpy, name)

    @staticmethod
    def greater(a, b, dtype=None):
        r = numpy.greater(a, b)
        return r.astype(dtype) if dtype is not None else r


torch_summary.np = _Numpy()

root = sys.argv[2]


def write_torch():
    t = [1000]

    def wall():
        t[0] += 1
        return t[0] + 0.25
    w = SummaryWriter(os.path.join(root, "torch"))
    for i in range(5):
        w.add_scalar("loss", 1 / (i + 1), i, wall())
    w.add_scalar("tensor_scalar", torch.tensor([2.5]), 10, wall())
    w.add_scalar("zero", 0, 0, wall())
    w.add_scalar("negative_step", -3.75, -2, wall())
    for i in range(3):
        w.add_scalars("grp/x", {"a": i, "b": 2 * i + 0.5}, i, wall())
    w.add_histogram("hist3", torch.tensor([1., 2, 2, 3, 3, 3]), 1, bins=3, walltime=wall())
    w.add_histogram("hist_tf", torch.tensor([-1.5, 0.25, 0.25, 3, 0]), 2, walltime=wall())
    w.add_histogram("hist_same", torch.tensor([2., 2, 2]), 3, bins=4, walltime=wall())
    px = torch.tensor([[[10 * (3 * y + x) + c for c in range(3)] for x in range(3)] for y in range(2)],
                      dtype=torch.uint8)
    w.add_image("img_u8_hwc", px, 0, wall(), "HWC")
    w.add_image("img_f_chw", torch.tensor([[[0, 0.5], [1, 0.25]]]), 1, walltime=wall())
    w.add_image("img_hw", torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]), 2, wall(), "HW")
    w.add_image("img_rgba", torch.tensor([[[1., 0]], [[0, 1]], [[0.5, 0.5]], [[1, 0.2]]]), 3, wall())
    w.add_text("note", "hello *world*", 3, wall())
    w.add_text("empty", "", 4, wall())
    w.add_hparams({"layers": 3, "lr": 0.01, "optimizer": "sgd"},
                  {"hparam/accuracy": 0.75, "hparam/loss": 0.5},
                  hparam_domain_discrete={"optimizer": ["adam", "sgd"]}, run_name="hp")
    w.close()
    p = SummaryWriter(os.path.join(root, "torch_purge"), purge_step=5)
    p.add_scalar("after_purge", 1, 5, wall())
    p.close()


def records(run_dir):
    """The raw records of the run's one event file (TFRecord framing read here)."""
    (path,) = glob.glob(os.path.join(run_dir, "events.out.tfevents.*"))
    data = open(path, "rb").read()
    out, pos = [], 0
    while pos < len(data):
        (n,) = struct.unpack("<Q", data[pos:pos + 8])
        out.append(data[pos + 12:pos + 12 + n])
        pos += 16 + n
    return out


def event(raw):
    e = event_pb2.Event()
    e.ParseFromString(raw)
    return e


def tag_of(raw):
    e = event(raw)
    return e.summary.value[0].tag if e.summary.value else e.WhichOneof("what")


def compare_run(name, sub, fields_only=()):
    """Every record after the file-version one: bytes equal, or for tags in
    fields_only equal after the PNG is replaced by its decoded pixels."""
    mine, theirs = records(os.path.join(root, "ember", sub)), records(os.path.join(root, "torch", sub))
    if len(mine) != len(theirs):
        tap.report(name, False, "%d records, PyTorch %d" % (len(mine), len(theirs)))
        return
    if event(mine[0]).file_version != event(theirs[0]).file_version:
        tap.report(name + ": file version", False, "%r" % event(mine[0]))
    by_tag = {}
    for a, b in zip(mine[1:], theirs[1:]):
        tag = tag_of(b)
        if a == b:
            by_tag.setdefault(tag, []).append(None)
            continue
        if tag in fields_only:
            ea, eb = event(a), event(b)
            ia, ib = ea.summary.value[0].image, eb.summary.value[0].image
            pa = Image.open(io.BytesIO(ia.encoded_image_string))
            pb = Image.open(io.BytesIO(ib.encoded_image_string))
            same_pixels = pa.mode == pb.mode and pa.size == pb.size and pa.tobytes() == pb.tobytes()
            ia.encoded_image_string = b""
            ib.encoded_image_string = b""
            if same_pixels and ea == eb:
                by_tag.setdefault(tag, []).append(None)
                continue
            by_tag.setdefault(tag, []).append("fields or pixels differ:\n%s\n%s %s %s" % (ea, eb, pa.tobytes(), pb.tobytes()))
            continue
        by_tag.setdefault(tag, []).append("bytes differ:\nember   %s\nPyTorch %s\n%s%s" % (a.hex(), b.hex(), event(a), event(b)))
    for tag, results in by_tag.items():
        errs = [r for r in results if r]
        how = "pixel- and field-identical" if tag in fields_only else "byte-identical"
        tap.report("%s %s: %d record(s) %s to PyTorch's" % (name, tag, len(results), how), not errs,
                   errs[0] if errs else "")


def compare_hparams():
    mine, theirs = records(os.path.join(root, "ember", "hp")), records(os.path.join(root, "torch", "hp"))
    problems = []
    if len(mine) != len(theirs):
        problems.append("%d records, PyTorch %d" % (len(mine), len(theirs)))
    for a, b in zip(mine[1:], theirs[1:]):
        ea, eb = event(a), event(b)
        ea.wall_time = eb.wall_time = 0   # add_hparams takes no walltime
        va, vb = ea.summary.value[0], eb.summary.value[0]
        if va.metadata.plugin_data.plugin_name == "hparams":
            da, db = plugin_data_pb2.HParamsPluginData(), plugin_data_pb2.HParamsPluginData()
            da.ParseFromString(va.metadata.plugin_data.content)
            db.ParseFromString(vb.metadata.plugin_data.content)
            if da != db:
                problems.append("%s:\n%s\nPyTorch:\n%s" % (va.tag, da, db))
            va.metadata.plugin_data.content = vb.metadata.plugin_data.content = b""
        if ea != eb:
            problems.append("%s\nPyTorch:\n%s" % (ea, eb))
    tap.report("add_hparams: experiment, session start/end and metric scalars field-identical to PyTorch's",
               not problems, "\n".join(problems))


write_torch()
compare_run("summaries", "", fields_only={"img_u8_hwc", "img_f_chw", "img_hw", "img_rgba"})
compare_run("add_scalars grp_x_a", "grp_x_a")
compare_run("add_scalars grp_x_b", "grp_x_b")
compare_hparams()
mine, theirs = records(os.path.join(root, "ember_purge")), records(os.path.join(root, "torch_purge"))
tap.report("purge_step records byte-identical to PyTorch's (wall time aside)",
           len(mine) == len(theirs) and all(event(a).step == event(b).step and event(a).WhichOneof("what") == event(b).WhichOneof("what")
                                            for a, b in zip(mine, theirs)) and mine[-1] == theirs[-1],
           "%r\n%r" % ([event(a) for a in mine], [event(b) for b in theirs]))
tap.done()
