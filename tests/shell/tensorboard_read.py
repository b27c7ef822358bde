"""tensorboard_read.py — reads ember's event files back with TensorBoard's own
loaders (run with the tensorboard venv's python, /opt/ember-pyenv/bin/python)
and checks every event, as TAP (tap.py):

  tensorboard_read.py summaries DIR   what tests/shell/tensorboard_write.lua wrote
  tensorboard_read.py train DIR TAG...  a training script's --tensorboard DIR:
                                        the scalar tags exist, their steps increase

Expected values are written out by hand here (the histogram buckets, the
pixels of each image)."""
import glob
import io
import math
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402

from tensorboard.backend.event_processing import event_accumulator, event_file_loader  # noqa: E402


def events(run_dir):
    """Every event of the run's event files (one folder, not its subfolders)."""
    files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    out = []
    for f in files:
        out.extend(event_file_loader.LegacyEventFileLoader(f).Load())
    return files, out


def accumulator(run_dir):
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={
        event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0,
        event_accumulator.IMAGES: 0, event_accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def check(name, fn):
    try:
        detail = fn()
        tap.report(name, detail is None, detail or "")
    except Exception as e:  # a loader error is a failure with its message
        tap.report(name, False, "%s: %s" % (type(e).__name__, e))


def close(a, b, rel=1e-6):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def png_pixels(data):
    """(width, height, channels, rows of bytes): an independent decoder for the
    unfiltered and filtered 8-bit PNGs (all five filter types)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]
        assert zlib.crc32(kind + body) == crc, "bad CRC in chunk %r" % kind
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0
    c = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * c
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - c] if i >= c else 0
            b = prev[i]
            cc = prev[i - c] if i >= c else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - cc
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - cc)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else cc)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, c, rows


def summaries(root):
    run = os.path.join(root, "ember")
    files, evs = events(run)
    check("one event file in the run folder, named events.out.tfevents.<time>.<host>.<pid>.<n>",
          lambda: None if len(files) == 1 and len(os.path.basename(files[0]).split(".")) >= 7
          else "files: %r" % files)
    check("the first event is the file version brain.Event:2",
          lambda: None if evs and evs[0].file_version == "brain.Event:2" else str(evs[:1]))

    acc = accumulator(run)

    def scalars():
        got = [(e.step, e.value) for e in acc.Scalars("loss")]
        want = [(i, f32(1 / (i + 1))) for i in range(5)]
        if got != want:
            return "loss: %r != %r" % (got, want)
        walls = [e.wall_time for e in acc.Scalars("loss")]
        if walls != [1001.25 + i for i in range(5)]:
            return "wall times %r" % walls
        for tag, step, value in [("tensor_scalar", 10, 2.5), ("zero", 0, 0.0), ("negative_step", -2, -3.75)]:
            s = acc.Scalars(tag)
            if [(e.step, e.value) for e in s] != [(step, value)]:
                return "%s: %r" % (tag, s)
        return None
    check("scalars: tags, steps, values and wall times", scalars)

    def groups():
        for sub, fn in [("grp_x_a", lambda i: i), ("grp_x_b", lambda i: 2 * i + 0.5)]:
            a = accumulator(os.path.join(run, sub))
            got = [(e.step, e.value) for e in a.Scalars("grp/x")]
            want = [(i, float(fn(i))) for i in range(3)]
            if got != want:
                return "%s: %r != %r" % (sub, got, want)
        return None
    check("add_scalars: one run per tag (grp_x_a, grp_x_b), tag grp/x", groups)

    def hist3():
        (h,) = acc.Histograms("hist3")
        v = h.histogram_value
        # values 1,2,2,3,3,3 in 3 bins over [1, 3]: edges 1, 5/3, 7/3, 3; counts 1, 2, 3;
        # PyTorch puts an empty bucket first, ending at the left edge
        want = dict(min=1, max=3, num=6, sum=14, sum_squares=36)
        got = dict(min=v.min, max=v.max, num=v.num, sum=v.sum, sum_squares=v.sum_squares)
        if got != want or h.step != 1:
            return "%r (step %d)" % (got, h.step)
        if list(v.bucket) != [0, 1, 2, 3]:
            return "buckets %r" % list(v.bucket)
        lim = list(v.bucket_limit)
        if len(lim) != 4 or not all(close(a, b, 1e-15) for a, b in zip(lim, [1, 5 / 3, 7 / 3, 3])):
            return "limits %r" % lim
        return None
    check("histogram, 3 bins: min, max, num, sum, sum_squares, buckets, limits", hist3)

    def hist_tf():
        (h,) = acc.Histograms("hist_tf")
        v = h.histogram_value
        if (v.min, v.max, v.num, v.sum, v.sum_squares) != (-1.5, 3, 5, 2.0, 2.25 + 0.0625 * 2 + 9):
            return "fields %r" % v
        # TensorBoard's default edges: +-1e-12 * 1.1^k and 0; the values fall into the
        # bins whose right edges are the first edge above each value
        edges = []
        x = 1e-12
        while x < 1e20:
            edges.append(x)
            x *= 1.1
        edges = [-e for e in reversed(edges)] + [0] + edges

        def right_edge(val):
            return min(e for e in edges if e > val)
        lim, cnt = list(v.bucket_limit), list(v.bucket)
        found = {lim[i]: cnt[i] for i in range(len(lim)) if cnt[i]}
        want = {right_edge(-1.5): 1, right_edge(0.0): 1, right_edge(0.25): 2, right_edge(3.0): 1}
        if found != want:
            return "nonzero buckets %r != %r" % (found, want)
        # the first bucket: empty, ending at the left edge of the lowest value's bin
        if cnt[0] != 0 or lim[0] != max(e for e in edges if e <= -1.5) or lim[-1] != right_edge(3.0):
            return "first/last bucket %r %r / %r" % (lim[0], cnt[0], lim[-1])
        if sum(cnt) != 5 or lim != sorted(lim):
            return "counts or order"
        return None
    check("histogram, default (tensorflow) bins: fields and buckets", hist_tf)

    def hist_same():
        (h,) = acc.Histograms("hist_same")
        v = h.histogram_value
        # all equal: numpy widens the range to [1.5, 2.5]; 4 bins of 0.25; 2 falls in bin 3
        if list(v.bucket) != [0, 3] or list(v.bucket_limit) != [2.0, 2.25]:
            return "%r %r" % (list(v.bucket), list(v.bucket_limit))
        return None
    check("histogram of equal values (range widened by 0.5)", hist_same)

    def image(tag, step, want_rows, want_c):
        (im,) = acc.Images(tag)
        w, h, c, rows = png_pixels(im.encoded_image_string)
        if im.step != step or (im.width, im.height) != (w, h) or (w, h) != (len(want_rows[0]) // want_c, len(want_rows)):
            return "step %d, %dx%d header %dx%d" % (im.step, im.width, im.height, w, h)
        if c != want_c:
            return "channels %d != %d" % (c, want_c)
        if rows != [bytes(r) for r in want_rows]:
            return "pixels %r != %r" % (rows, want_rows)
        try:
            from PIL import Image
            pil = Image.open(io.BytesIO(im.encoded_image_string))
            pil.load()
            if pil.size != (w, h):
                return "PIL size %r" % (pil.size,)
        except ImportError:
            pass
        return None

    u8 = [[v for x in range(3) for v in (10 * (3 * y + x), 10 * (3 * y + x) + 1, 10 * (3 * y + x) + 2)] for y in range(2)]
    check("image uint8 HWC 2x3: size and pixels", lambda: image("img_u8_hwc", 0, u8, 3))

    def grey(vals):  # float -> uint8 as PyTorch: float32 * 255, truncated; grey -> RGB
        return [[v for x in row for v in [int(f32(f32(x) * 255))] * 3] for row in vals]
    check("image float CHW, 1 channel (as RGB)", lambda: image("img_f_chw", 1, grey([[0, 0.5], [1, 0.25]]), 3))
    check("image float HW (as RGB)", lambda: image("img_hw", 2, grey([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]), 3))
    rgba = [[int(f32(f32(x) * 255)) for p in [(1, 0, 0.5, 1), (0, 1, 0.5, 0.2)] for x in p]]
    check("image float RGBA CHW", lambda: image("img_rgba", 3, rgba, 4))

    def texts():
        got = {}
        for e in evs:
            for v in e.summary.value:
                if v.metadata.plugin_data.plugin_name == "text":
                    got[v.tag] = (e.step, [s.decode() for s in v.tensor.string_val], v.tensor.dtype,
                                  [d.size for d in v.tensor.tensor_shape.dim])
        want = {"note/text_summary": (3, ["hello *world*"], 7, [1]), "empty/text_summary": (4, [""], 7, [1])}
        return None if got == want else "%r" % got
    check("text: tag/text_summary, step, string tensor", texts)

    def hparams():
        from tensorboard.plugins.hparams import plugin_data_pb2
        _, hp = events(os.path.join(run, "hp"))
        data = {}
        scalars = {}
        for e in hp[1:]:
            for v in e.summary.value:
                if v.metadata.plugin_data.plugin_name == "hparams":
                    d = plugin_data_pb2.HParamsPluginData()
                    d.ParseFromString(v.metadata.plugin_data.content)
                    data[v.tag] = d
                else:
                    scalars[v.tag] = v.simple_value
        exp = data["_hparams_/experiment"].experiment
        infos = {i.name: (i.type, [x.string_value for x in i.domain_discrete.values]) for i in exp.hparam_infos}
        if infos != {"layers": (3, []), "lr": (3, []), "optimizer": (1, ["adam", "sgd"])}:
            return "hparam_infos %r" % infos
        if sorted(m.name.tag for m in exp.metric_infos) != ["hparam/accuracy", "hparam/loss"]:
            return "metric_infos %r" % exp.metric_infos
        ssi = data["_hparams_/session_start_info"].session_start_info
        hp_values = {k: v.WhichOneof("kind") and getattr(v, v.WhichOneof("kind")) for k, v in ssi.hparams.items()}
        if hp_values != {"layers": 3.0, "lr": 0.01, "optimizer": "sgd"}:
            return "session_start_info %r" % hp_values
        if data["_hparams_/session_end_info"].session_end_info.status != 1:
            return "session_end_info %r" % data["_hparams_/session_end_info"]
        if scalars != {"hparam/accuracy": 0.75, "hparam/loss": 0.5}:
            return "metric scalars %r" % scalars
        return None
    check("hparams: experiment, session start/end in run hp, metric scalars", hparams)

    def purge():
        _, pe = events(os.path.join(root, "ember_purge"))
        kinds = [(e.step, e.WhichOneof("what")) for e in pe]
        want = [(0, "file_version"), (5, "file_version"), (5, "session_log"), (5, "summary")]
        if kinds != want or pe[2].session_log.status != 1:
            return "%r" % kinds
        return None
    check("purge_step: file_version and SessionLog START at the purge step", purge)

    def every_event_known():
        seen = set()
        for e in evs[1:]:
            for v in e.summary.value:
                seen.add(v.tag)
        want = {"loss", "tensor_scalar", "zero", "negative_step", "hist3", "hist_tf", "hist_same", "img_u8_hwc",
                "img_f_chw", "img_hw", "img_rgba", "note/text_summary", "empty/text_summary"}
        return None if seen == want and len(evs) == 1 + 5 + 3 + 3 + 4 + 2 else "%r (%d events)" % (seen, len(evs))
    check("no other events in the run", every_event_known)


def train(root, *want):
    acc = accumulator(root)
    tags = acc.Tags()["scalars"]

    def loss_tags():
        return None if set(want) <= set(tags) else "scalar tags %r" % tags
    check("training run: scalars " + ", ".join(want), loss_tags)

    def steps():
        for tag in want:
            s = [e.step for e in acc.Scalars(tag)]
            if len(s) < 2 or any(b <= a for a, b in zip(s, s[1:])):
                return "%s steps %r" % (tag, s)
            if not all(math.isfinite(e.value) for e in acc.Scalars(tag)):
                return "%s values not finite" % tag
        return None
    check("training run: steps increase, values finite", steps)


if __name__ == "__main__":
    {"summaries": summaries, "train": train}[sys.argv[1]](*sys.argv[2:])
    tap.done()
