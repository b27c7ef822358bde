-- format_spec.lua — tostring(tensor) against PyTorch 1.13's printing.
--
-- The expected strings were produced by PyTorch's own printer
-- (torch._tensor_str._tensor_str and _add_suffixes) for the equivalent torch
-- tensor, with the dtype suffix spelled as ember spells it ("dtype=float64"
-- for torch's "dtype=torch.float64"; the wrap of a suffix onto its own line
-- was decided with ember's shorter name). The generator is at the end of this
-- file. Each case: name, Lua expression building the tensor, expected text.
local ember = require "ember"

local cases = {
    {"2-d float", "ember.tensor({{1.5, 2}, {3, 4}})",
     "tensor([[1.5000, 2.0000],\n        [3.0000, 4.0000]])"},
    {"int64 vector", "ember.tensor({1, 2, 3})",
     "tensor([1, 2, 3])"},
    {"integral floats", "ember.tensor({1.0, 2.0, 3.0})",
     "tensor([1., 2., 3.])"},
    {"0-d float", "ember.tensor(3.5)",
     "tensor(3.5000)"},
    {"0-d int", "ember.tensor(7)",
     "tensor(7)"},
    {"0-d integral float", "ember.tensor(2.0)",
     "tensor(2.)"},
    {"0-d float64", "ember.tensor(0.1, {dtype = \"float64\"})",
     "tensor(0.1000, dtype=float64)"},
    {"0-d bool", "ember.tensor(true)",
     "tensor(True)"},
    {"0-d sci", "ember.tensor(1e-7)",
     "tensor(1.0000e-07)"},
    {"empty 1-d", "ember.zeros(0)",
     "tensor([])"},
    {"empty 2-d", "ember.zeros(0, 3)",
     "tensor([], size=(0, 3))"},
    {"empty 3-d int64", "ember.zeros(2, 0, 3, {dtype = \"int64\"})",
     "tensor([], size=(2, 0, 3), dtype=int64)"},
    {"empty int64", "ember.zeros(0, {dtype = \"int64\"})",
     "tensor([], dtype=int64)"},
    {"empty bool", "ember.zeros(0, {dtype = \"bool\"})",
     "tensor([], dtype=bool)"},
    {"empty float64", "ember.zeros(4, 0, {dtype = \"float64\"})",
     "tensor([], size=(4, 0), dtype=float64)"},
    {"float64", "ember.tensor({1.5, 2, 1/3}, {dtype = \"float64\"})",
     "tensor([1.5000, 2.0000, 0.3333], dtype=float64)"},
    {"int32", "ember.tensor({1, -20, 300}, {dtype = \"int32\"})",
     "tensor([  1, -20, 300], dtype=int32)"},
    {"uint8", "ember.tensor({0, 7, 255}, {dtype = \"uint8\"})",
     "tensor([  0,   7, 255], dtype=uint8)"},
    {"bool", "ember.tensor({true, false, true})",
     "tensor([ True, False,  True])"},
    {"bool all true", "ember.tensor({true, true})",
     "tensor([True, True])"},
    {"bool 2-d", "ember.tensor({{true, false}, {false, false}})",
     "tensor([[ True, False],\n        [False, False]])"},
    {"float16", "ember.tensor({1.5, 2, 0.1}, {dtype = \"float16\"})",
     "tensor([1.5000, 2.0000, 0.1000], dtype=float16)"},
    {"bfloat16", "ember.tensor({1.5, 2, 0.1}, {dtype = \"bfloat16\"})",
     "tensor([1.5000, 2.0000, 0.1001], dtype=bfloat16)"},
    {"negatives", "ember.tensor({-1.5, 2.25, -3})",
     "tensor([-1.5000,  2.2500, -3.0000])"},
    {"negative ints", "ember.tensor({-1, 20, -300})",
     "tensor([  -1,   20, -300])"},
    {"big int64", "ember.tensor({9007199254740993, -9007199254740993})",
     "tensor([ 9007199254740993, -9007199254740993])"},
    {"rounding", "ember.tensor({0.12345, 2.71828, 1/3})",
     "tensor([0.1235, 2.7183, 0.3333])"},
    {"sci small", "ember.tensor({1e-5, 1.0})",
     "tensor([1.0000e-05, 1.0000e+00])"},
    {"sci ratio", "ember.tensor({123456.789, 1.5})",
     "tensor([1.2346e+05, 1.5000e+00])"},
    {"fixed wide", "ember.tensor({1234.5678, 1.5})",
     "tensor([1234.5677,    1.5000])"},
    {"sci large", "ember.tensor({1e9, 2.5})",
     "tensor([1.0000e+09, 2.5000e+00])"},
    {"sci mixed signs", "ember.tensor({{-1e-6, 3.25e5}, {7.5, -0.5}})",
     "tensor([[-1.0000e-06,  3.2500e+05],\n        [ 7.5000e+00, -5.0000e-01]])"},
    {"integral sci large", "ember.tensor({1e10, 1.0, 2.0})",
     "tensor([1.0000e+10, 1.0000e+00, 2.0000e+00])"},
    {"integral sci ratio", "ember.tensor({5000.0, 1.0})",
     "tensor([5.0000e+03, 1.0000e+00])"},
    {"integral wide", "ember.tensor({999.0, 1.0, -5.0})",
     "tensor([999.,   1.,  -5.])"},
    {"float64 sci", "ember.tensor({1e-300, 1e300}, {dtype = \"float64\"})",
     "tensor([1.0000e-300, 1.0000e+300], dtype=float64)"},
    {"threshold 1e-4", "ember.tensor({0.0001, 0.5})",
     "tensor([1.0000e-04, 5.0000e-01])"},
    {"just above 1e-4", "ember.tensor({0.00011, 0.5})",
     "tensor([1.1000e-04, 5.0000e-01])"},
    {"tiny only", "ember.tensor({1e-30})",
     "tensor([1.0000e-30])"},
    {"nan inf", "ember.tensor({0/0, 1/0, -1/0, 1.5})",
     "tensor([   nan,    inf,   -inf, 1.5000])"},
    {"nan integral", "ember.tensor({0/0, 1.0, -2.0})",
     "tensor([nan,  1., -2.])"},
    {"inf sci", "ember.tensor({1/0, 1e-6, 1.0})",
     "tensor([       inf, 1.0000e-06, 1.0000e+00])"},
    {"nan only", "ember.tensor({0/0, 0/0})",
     "tensor([nan, nan])"},
    {"inf and zero", "ember.tensor({-1/0, 0.0})",
     "tensor([-inf, 0.])"},
    {"all zeros", "ember.zeros(3)",
     "tensor([0., 0., 0.])"},
    {"zeros 2-d", "ember.zeros(2, 2)",
     "tensor([[0., 0.],\n        [0., 0.]])"},
    {"negative zero", "ember.tensor({-0.0, 1.5})",
     "tensor([-0.0000, 1.5000])"},
    {"eye", "ember.eye(3)",
     "tensor([[1., 0., 0.],\n        [0., 1., 0.],\n        [0., 0., 1.]])"},
    {"full", "ember.full({2, 2}, 7.0)",
     "tensor([[7., 7.],\n        [7., 7.]])"},
    {"full int", "ember.full({2, 2}, 7)",
     "tensor([[7, 7],\n        [7, 7]])"},
    {"3-d int", "ember.arange(24):reshape(2, 3, 4)",
     "tensor([[[ 0,  1,  2,  3],\n         [ 4,  5,  6,  7],\n         [ 8,  9, 10, 11]],\n\n        [[12, 13, 14, 15],\n         [16, 17, 18, 19],\n         [20, 21, 22, 23]]])"},
    {"3-d float", "ember.arange(0, 12, 0.5):reshape(2, 3, 4)",
     "tensor([[[ 0.0000,  0.5000,  1.0000,  1.5000],\n         [ 2.0000,  2.5000,  3.0000,  3.5000],\n         [ 4.0000,  4.5000,  5.0000,  5.5000]],\n\n        [[ 6.0000,  6.5000,  7.0000,  7.5000],\n         [ 8.0000,  8.5000,  9.0000,  9.5000],\n         [10.0000, 10.5000, 11.0000, 11.5000]]])"},
    {"4-d", "ember.arange(16):reshape(2, 2, 2, 2)",
     "tensor([[[[ 0,  1],\n          [ 2,  3]],\n\n         [[ 4,  5],\n          [ 6,  7]]],\n\n\n        [[[ 8,  9],\n          [10, 11]],\n\n         [[12, 13],\n          [14, 15]]]])"},
    {"size-1 dims", "ember.tensor({{{1.5}}})",
     "tensor([[[1.5000]]])"},
    {"wrap int", "ember.arange(100)",
     "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])"},
    {"wrap float", "ember.arange(0, 45, 1.5)",
     "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000])"},
    {"wrap 2-d rows", "ember.arange(0, 60, 1.5):reshape(2, 20)",
     "tensor([[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n         12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n         24.0000, 25.5000, 27.0000, 28.5000],\n        [30.0000, 31.5000, 33.0000, 34.5000, 36.0000, 37.5000, 39.0000, 40.5000,\n         42.0000, 43.5000, 45.0000, 46.5000, 48.0000, 49.5000, 51.0000, 52.5000,\n         54.0000, 55.5000, 57.0000, 58.5000]])"},
    {"wrap 3-d rows", "ember.arange(0, 60, 1.5):reshape(2, 1, 20)",
     "tensor([[[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000,\n          10.5000, 12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000,\n          21.0000, 22.5000, 24.0000, 25.5000, 27.0000, 28.5000]],\n\n        [[30.0000, 31.5000, 33.0000, 34.5000, 36.0000, 37.5000, 39.0000,\n          40.5000, 42.0000, 43.5000, 45.0000, 46.5000, 48.0000, 49.5000,\n          51.0000, 52.5000, 54.0000, 55.5000, 57.0000, 58.5000]]])"},
    {"summarised 1-d", "ember.arange(2000)",
     "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"},
    {"summarised 1-d float", "ember.arange(0, 500.5, 0.5)",
     "tensor([  0.0000,   0.5000,   1.0000,  ..., 499.0000, 499.5000, 500.0000])"},
    {"summarised 2-d", "ember.arange(2000):reshape(40, 50)",
     "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n        [  50,   51,   52,  ...,   97,   98,   99],\n        [ 100,  101,  102,  ...,  147,  148,  149],\n        ...,\n        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])"},
    {"summarised 3-d", "ember.arange(2048):reshape(8, 16, 16)",
     "tensor([[[   0,    1,    2,  ...,   13,   14,   15],\n         [  16,   17,   18,  ...,   29,   30,   31],\n         [  32,   33,   34,  ...,   45,   46,   47],\n         ...,\n         [ 208,  209,  210,  ...,  221,  222,  223],\n         [ 224,  225,  226,  ...,  237,  238,  239],\n         [ 240,  241,  242,  ...,  253,  254,  255]],\n\n        [[ 256,  257,  258,  ...,  269,  270,  271],\n         [ 272,  273,  274,  ...,  285,  286,  287],\n         [ 288,  289,  290,  ...,  301,  302,  303],\n         ...,\n         [ 464,  465,  466,  ...,  477,  478,  479],\n         [ 480,  481,  482,  ...,  493,  494,  495],\n         [ 496,  497,  498,  ...,  509,  510,  511]],\n\n        [[ 512,  513,  514,  ...,  525,  526,  527],\n         [ 528,  529,  530,  ...,  541,  542,  543],\n         [ 544,  545,  546,  ...,  557,  558,  559],\n         ...,\n         [ 720,  721,  722,  ...,  733,  734,  735],\n         [ 736,  737,  738,  ...,  749,  750,  751],\n         [ 752,  753,  754,  ...,  765,  766,  767]],\n\n        ...,\n\n        [[1280, 1281, 1282,  ..., 1293, 1294, 1295],\n         [1296, 1297, 1298,  ..., 1309, 1310, 1311],\n         [1312, 1313, 1314,  ..., 1325, 1326, 1327],\n         ...,\n         [1488, 1489, 1490,  ..., 1501, 1502, 1503],\n         [1504, 1505, 1506,  ..., 1517, 1518, 1519],\n         [1520, 1521, 1522,  ..., 1533, 1534, 1535]],\n\n        [[1536, 1537, 1538,  ..., 1549, 1550, 1551],\n         [1552, 1553, 1554,  ..., 1565, 1566, 1567],\n         [1568, 1569, 1570,  ..., 1581, 1582, 1583],\n         ...,\n         [1744, 1745, 1746,  ..., 1757, 1758, 1759],\n         [1760, 1761, 1762,  ..., 1773, 1774, 1775],\n         [1776, 1777, 1778,  ..., 1789, 1790, 1791]],\n\n        [[1792, 1793, 1794,  ..., 1805, 1806, 1807],\n         [1808, 1809, 1810,  ..., 1821, 1822, 1823],\n         [1824, 1825, 1826,  ..., 1837, 1838, 1839],\n         ...,\n         [2000, 2001, 2002,  ..., 2013, 2014, 2015],\n         [2016, 2017, 2018,  ..., 2029, 2030, 2031],\n         [2032, 2033, 2034,  ..., 2045, 2046, 2047]]])"},
    {"summarised short inner dim", "ember.arange(1005):reshape(201, 5)",
     "tensor([[   0,    1,    2,    3,    4],\n        [   5,    6,    7,    8,    9],\n        [  10,   11,   12,   13,   14],\n        ...,\n        [ 990,  991,  992,  993,  994],\n        [ 995,  996,  997,  998,  999],\n        [1000, 1001, 1002, 1003, 1004]])"},
    {"summarised short outer dim", "ember.arange(0, 1010, 1.0):reshape(2, 505)",
     "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 5.0200e+02, 5.0300e+02,\n         5.0400e+02],\n        [5.0500e+02, 5.0600e+02, 5.0700e+02,  ..., 1.0070e+03, 1.0080e+03,\n         1.0090e+03]])"},
    {"summarised formatter sees edges", "ember.arange(1, 1002):float()",
     "tensor([1.0000e+00, 2.0000e+00, 3.0000e+00,  ..., 9.9900e+02, 1.0000e+03,\n        1.0010e+03])"},
    {"summarised bool", "ember.zeros(1001, {dtype = \"bool\"})",
     "tensor([False, False, False,  ..., False, False, False])"},
    {"exactly threshold", "ember.arange(1000)",
     "tensor([  0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,\n         14,  15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,  26,  27,\n         28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,  41,\n         42,  43,  44,  45,  46,  47,  48,  49,  50,  51,  52,  53,  54,  55,\n         56,  57,  58,  59,  60,  61,  62,  63,  64,  65,  66,  67,  68,  69,\n         70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,  81,  82,  83,\n         84,  85,  86,  87,  88,  89,  90,  91,  92,  93,  94,  95,  96,  97,\n         98,  99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111,\n        112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125,\n        126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139,\n        140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153,\n        154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167,\n        168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181,\n        182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195,\n        196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209,\n        210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223,\n        224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237,\n        238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251,\n        252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265,\n        266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279,\n        280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293,\n        294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307,\n        308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321,\n        322, 323, 324, 325, 326, 327, 328, 329, 330, 331, 332, 333, 334, 335,\n        336, 337, 338, 339, 340, 341, 342, 343, 344, 345, 346, 347, 348, 349,\n        350, 351, 352, 353, 354, 355, 356, 357, 358, 359, 360, 361, 362, 363,\n        364, 365, 366, 367, 368, 369, 370, 371, 372, 373, 374, 375, 376, 377,\n        378, 379, 380, 381, 382, 383, 384, 385, 386, 387, 388, 389, 390, 391,\n        392, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402, 403, 404, 405,\n        406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 419,\n        420, 421, 422, 423, 424, 425, 426, 427, 428, 429, 430, 431, 432, 433,\n        434, 435, 436, 437, 438, 439, 440, 441, 442, 443, 444, 445, 446, 447,\n        448, 449, 450, 451, 452, 453, 454, 455, 456, 457, 458, 459, 460, 461,\n        462, 463, 464, 465, 466, 467, 468, 469, 470, 471, 472, 473, 474, 475,\n        476, 477, 478, 479, 480, 481, 482, 483, 484, 485, 486, 487, 488, 489,\n        490, 491, 492, 493, 494, 495, 496, 497, 498, 499, 500, 501, 502, 503,\n        504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517,\n        518, 519, 520, 521, 522, 523, 524, 525, 526, 527, 528, 529, 530, 531,\n        532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543, 544, 545,\n        546, 547, 548, 549, 550, 551, 552, 553, 554, 555, 556, 557, 558, 559,\n        560, 561, 562, 563, 564, 565, 566, 567, 568, 569, 570, 571, 572, 573,\n        574, 575, 576, 577, 578, 579, 580, 581, 582, 583, 584, 585, 586, 587,\n        588, 589, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599, 600, 601,\n        602, 603, 604, 605, 606, 607, 608, 609, 610, 611, 612, 613, 614, 615,\n        616, 617, 618, 619, 620, 621, 622, 623, 624, 625, 626, 627, 628, 629,\n        630, 631, 632, 633, 634, 635, 636, 637, 638, 639, 640, 641, 642, 643,\n        644, 645, 646, 647, 648, 649, 650, 651, 652, 653, 654, 655, 656, 657,\n        658, 659, 660, 661, 662, 663, 664, 665, 666, 667, 668, 669, 670, 671,\n        672, 673, 674, 675, 676, 677, 678, 679, 680, 681, 682, 683, 684, 685,\n        686, 687, 688, 689, 690, 691, 692, 693, 694, 695, 696, 697, 698, 699,\n        700, 701, 702, 703, 704, 705, 706, 707, 708, 709, 710, 711, 712, 713,\n        714, 715, 716, 717, 718, 719, 720, 721, 722, 723, 724, 725, 726, 727,\n        728, 729, 730, 731, 732, 733, 734, 735, 736, 737, 738, 739, 740, 741,\n        742, 743, 744, 745, 746, 747, 748, 749, 750, 751, 752, 753, 754, 755,\n        756, 757, 758, 759, 760, 761, 762, 763, 764, 765, 766, 767, 768, 769,\n        770, 771, 772, 773, 774, 775, 776, 777, 778, 779, 780, 781, 782, 783,\n        784, 785, 786, 787, 788, 789, 790, 791, 792, 793, 794, 795, 796, 797,\n        798, 799, 800, 801, 802, 803, 804, 805, 806, 807, 808, 809, 810, 811,\n        812, 813, 814, 815, 816, 817, 818, 819, 820, 821, 822, 823, 824, 825,\n        826, 827, 828, 829, 830, 831, 832, 833, 834, 835, 836, 837, 838, 839,\n        840, 841, 842, 843, 844, 845, 846, 847, 848, 849, 850, 851, 852, 853,\n        854, 855, 856, 857, 858, 859, 860, 861, 862, 863, 864, 865, 866, 867,\n        868, 869, 870, 871, 872, 873, 874, 875, 876, 877, 878, 879, 880, 881,\n        882, 883, 884, 885, 886, 887, 888, 889, 890, 891, 892, 893, 894, 895,\n        896, 897, 898, 899, 900, 901, 902, 903, 904, 905, 906, 907, 908, 909,\n        910, 911, 912, 913, 914, 915, 916, 917, 918, 919, 920, 921, 922, 923,\n        924, 925, 926, 927, 928, 929, 930, 931, 932, 933, 934, 935, 936, 937,\n        938, 939, 940, 941, 942, 943, 944, 945, 946, 947, 948, 949, 950, 951,\n        952, 953, 954, 955, 956, 957, 958, 959, 960, 961, 962, 963, 964, 965,\n        966, 967, 968, 969, 970, 971, 972, 973, 974, 975, 976, 977, 978, 979,\n        980, 981, 982, 983, 984, 985, 986, 987, 988, 989, 990, 991, 992, 993,\n        994, 995, 996, 997, 998, 999])"},
    {"transposed", "ember.arange(6):reshape(2, 3):t()",
     "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])"},
    {"narrowed", "ember.arange(12):reshape(3, 4):narrow(2, 2, 2)",
     "tensor([[ 1,  2],\n        [ 5,  6],\n        [ 9, 10]])"},
    {"expanded", "ember.tensor({1.5, 2, 3}):expand(2, 3)",
     "tensor([[1.5000, 2.0000, 3.0000],\n        [1.5000, 2.0000, 3.0000]])"},
    {"permuted 3-d", "ember.arange(0, 12, 0.25):reshape(2, 3, 8):permute(3, 1, 2)",
     "tensor([[[ 0.0000,  2.0000,  4.0000],\n         [ 6.0000,  8.0000, 10.0000]],\n\n        [[ 0.2500,  2.2500,  4.2500],\n         [ 6.2500,  8.2500, 10.2500]],\n\n        [[ 0.5000,  2.5000,  4.5000],\n         [ 6.5000,  8.5000, 10.5000]],\n\n        [[ 0.7500,  2.7500,  4.7500],\n         [ 6.7500,  8.7500, 10.7500]],\n\n        [[ 1.0000,  3.0000,  5.0000],\n         [ 7.0000,  9.0000, 11.0000]],\n\n        [[ 1.2500,  3.2500,  5.2500],\n         [ 7.2500,  9.2500, 11.2500]],\n\n        [[ 1.5000,  3.5000,  5.5000],\n         [ 7.5000,  9.5000, 11.5000]],\n\n        [[ 1.7500,  3.7500,  5.7500],\n         [ 7.7500,  9.7500, 11.7500]]])"},
    {"summarised transposed", "ember.arange(0, 2000, 1.0):reshape(40, 50):t()",
     "tensor([[0.0000e+00, 5.0000e+01, 1.0000e+02,  ..., 1.8500e+03, 1.9000e+03,\n         1.9500e+03],\n        [1.0000e+00, 5.1000e+01, 1.0100e+02,  ..., 1.8510e+03, 1.9010e+03,\n         1.9510e+03],\n        [2.0000e+00, 5.2000e+01, 1.0200e+02,  ..., 1.8520e+03, 1.9020e+03,\n         1.9520e+03],\n        ...,\n        [4.7000e+01, 9.7000e+01, 1.4700e+02,  ..., 1.8970e+03, 1.9470e+03,\n         1.9970e+03],\n        [4.8000e+01, 9.8000e+01, 1.4800e+02,  ..., 1.8980e+03, 1.9480e+03,\n         1.9980e+03],\n        [4.9000e+01, 9.9000e+01, 1.4900e+02,  ..., 1.8990e+03, 1.9490e+03,\n         1.9990e+03]])"},
    {"int32 suffix wraps", "ember.arange(10, 28, {dtype = \"int32\"})",
     "tensor([10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27],\n       dtype=int32)"},
    {"float64 suffix wraps", "ember.arange(0, 24, 1.5, {dtype = \"float64\"}):reshape(2, 8)",
     "tensor([[ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000],\n        [12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000]],\n       dtype=float64)"},
    {"float64 suffix wraps 1-d", "ember.arange(10, 17.5, 1.5, {dtype = \"float64\"})",
     "tensor([10.0000, 11.5000, 13.0000, 14.5000, 16.0000], dtype=float64)"},
    {"int32 suffix fits", "ember.arange(20, {dtype = \"int32\"})",
     "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n        18, 19], dtype=int32)"},
    {"float64 multi-line suffix", "ember.arange(0, 18, 1.5, {dtype = \"float64\"})",
     "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n        12.0000, 13.5000, 15.0000, 16.5000], dtype=float64)"},
    {"float16 summarised", "ember.arange(0, 1100, 1, {dtype = \"float16\"})",
     "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.0970e+03, 1.0980e+03,\n        1.0990e+03], dtype=float16)"},
}

local function build(src)
    local chunk = assert(load("return " .. src, "=case", "t", {ember = ember}))
    return chunk()
end

describe("tostring(tensor) matches PyTorch", function()
    for _, case in ipairs(cases) do
        local name, src, expected = case[1], case[2], case[3]
        it(name .. ": " .. src, function()
            assert.are.equal(expected, tostring(build(src)))
        end)
    end
end)

describe("tostring(tensor)", function()
    it("is the __tostring of tensors, also used by print", function()
        local t = ember.tensor({1.5, 2})
        assert.are.equal("tensor([1.5000, 2.0000])", tostring(t))
        assert.are.equal(getmetatable(t).__tostring(t), tostring(t))
    end)

    it("marks a leaf that requires grad, and names the node of a recorded result", function()
        -- PyTorch 2.15: tensor([1., 1.], requires_grad=True), tensor([2., 2.], grad_fn=<MulBackward0>),
        -- tensor(4., grad_fn=<SumBackward0>); ember's node names have no overload number
        local x = ember.ones(2):requires_grad_()
        assert.are.equal("tensor([1., 1.], requires_grad=True)", tostring(x))
        assert.are.equal("tensor([2., 2.], grad_fn=<MulBackward>)", tostring(x * 2))
        assert.are.equal("tensor(4., grad_fn=<SumBackward>)", tostring((x * 2):sum()))
        local d = ember.ones(2, {dtype = "float64"}):requires_grad_()
        assert.are.equal("tensor([2., 2.], dtype=float64, grad_fn=<MulBackward>)", tostring(d * 2))
        assert.are.equal("tensor([1., 1.])", tostring(x:detach()))
        ember.no_grad(function() assert.are.equal("tensor([2., 2.])", tostring(x * 2)) end)
    end)

    it("does not change with the tensor's memory layout", function()
        local a = ember.arange(0, 6, 0.5):reshape(3, 4)
        local b = a:t():contiguous():t()
        assert.is_false(b:is_contiguous())
        assert.are.equal(tostring(a), tostring(b))
    end)

    it("names the dtype relative to the default dtype", function()
        local old = ember.get_default_dtype()
        ember.set_default_dtype("float64")
        local ok, err = pcall(function()
            -- torch.set_default_dtype(torch.float64): torch.tensor([1.5]) and
            -- torch.tensor([1.5], dtype=torch.float32)
            assert.are.equal("tensor([1.5000])", tostring(ember.tensor({1.5})))
            assert.are.equal("tensor([1.5000], dtype=float32)",
                             tostring(ember.tensor({1.5}, {dtype = "float32"})))
            assert.are.equal("tensor([], dtype=float32)",
                             tostring(ember.zeros(0, {dtype = "float32"})))
        end)
        ember.set_default_dtype(old)
        assert(ok, err)
    end)

    it("prints a huge tensor quickly, reading only the edge items", function()
        local t = ember.zeros(3000, 3000)
        local clock = os.clock()
        local s = tostring(t)
        assert.is_true(os.clock() - clock < 0.5)
        assert.are.equal("tensor([[0., 0., 0.,  ..., 0., 0., 0.],\n" ..
                         "        [0., 0., 0.,  ..., 0., 0., 0.],\n" ..
                         "        [0., 0., 0.,  ..., 0., 0., 0.],\n" ..
                         "        ...,\n" ..
                         "        [0., 0., 0.,  ..., 0., 0., 0.],\n" ..
                         "        [0., 0., 0.,  ..., 0., 0., 0.],\n" ..
                         "        [0., 0., 0.,  ..., 0., 0., 0.]])", s)
    end)

    it("rejects what is not a tensor, naming the op", function()
        local mt = getmetatable(ember.zeros(1))
        local ok, err = pcall(mt.__tostring, 42)
        assert.is_false(ok)
        assert.matches("tostring", err)
    end)
end)

-- ember.set_printoptions against PyTorch 2.15's torch.set_printoptions: each case
-- sets its options, prints, and goes back to the default profile. The expected
-- strings come from the second generator at the end of this file (run with
-- scripts/bench/torch-python).
local option_cases = {
    {"precision 2", "{precision = 2}", "ember.tensor({1.12345, 2.5, -3.75})",
     "tensor([ 1.12,  2.50, -3.75])"},
    {"precision 0", "{precision = 0}", "ember.tensor({1.6, 2.5, -3.75})",
     "tensor([ 2,  2, -4])"},
    {"precision 10 float64", "{precision = 10}", "ember.tensor({1/3, 2/3}, {dtype = \"float64\"})",
     "tensor([0.3333333333, 0.6666666667], dtype=float64)"},
    {"precision 2 sci", "{precision = 2}", "ember.tensor({1.12345, 100000.0})",
     "tensor([1.12e+00, 1.00e+05])"},
    {"sci_mode on", "{sci_mode = true}", "ember.tensor({1.0, 2.5})",
     "tensor([1.0000e+00, 2.5000e+00])"},
    {"sci_mode on integral", "{sci_mode = true}", "ember.tensor({1.0, 2.0})",
     "tensor([1.0000e+00, 2.0000e+00])"},
    {"sci_mode off", "{sci_mode = false}", "ember.tensor({1e-9, 1e9, 2.5})",
     "tensor([         0.0000, 1000000000.0000,          2.5000])"},
    {"sci_mode off integral", "{sci_mode = false}", "ember.tensor({1e10, 1.0})",
     "tensor([10000000000.,           1.])"},
    {"sci_mode off float64 huge", "{sci_mode = false}", "ember.tensor({1e300, -1.5}, {dtype = \"float64\"})",
     "tensor([1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160.0000,\n                                                                                                                                                                                                                                                                                                                   -1.5000],\n       dtype=float64)"},
    {"sci_mode off precision 30", "{sci_mode = false, precision = 30}", "ember.tensor({-1.7976931348623157e308}, {dtype = \"float64\"})",
     "tensor([-179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368.],\n       dtype=float64)"},
    {"sci_mode on ints untouched", "{sci_mode = true}", "ember.tensor({1, 20})",
     "tensor([ 1, 20])"},
    {"threshold 5", "{threshold = 5}", "ember.arange(10)",
     "tensor([0, 1, 2,  ..., 7, 8, 9])"},
    {"threshold 5 edgeitems 1", "{threshold = 5, edgeitems = 1}", "ember.arange(0, 10, 1.0)",
     "tensor([0.,  ..., 9.])"},
    {"edgeitems 1 2-d", "{threshold = 5, edgeitems = 1}", "ember.arange(24):reshape(4, 6)",
     "tensor([[ 0,  ...,  5],\n        ...,\n        [18,  ..., 23]])"},
    {"linewidth 20", "{linewidth = 20}", "ember.arange(0, 12, 1.0)",
     "tensor([ 0.,  1.,\n         2.,  3.,\n         4.,  5.,\n         6.,  7.,\n         8.,  9.,\n        10., 11.])"},
    {"linewidth 20 suffix", "{linewidth = 20}", "ember.arange(6, {dtype = \"int32\"})",
     "tensor([0, 1, 2, 3,\n        4, 5],\n       dtype=int32)"},
    {"profile short", "{profile = \"short\"}", "ember.tensor({{1.23456, 2, 3}, {4, 5, 6.5}})",
     "tensor([[1.23, 2.00, 3.00],\n        [4.00, 5.00, 6.50]])"},
    {"profile short summarised", "{profile = \"short\"}", "ember.arange(2000)",
     "tensor([   0,    1,  ..., 1998, 1999])"},
    {"profile full", "{profile = \"full\"}", "ember.arange(1001)",
     "tensor([   0,    1,    2,    3,    4,    5,    6,    7,    8,    9,   10,   11,\n          12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,\n          24,   25,   26,   27,   28,   29,   30,   31,   32,   33,   34,   35,\n          36,   37,   38,   39,   40,   41,   42,   43,   44,   45,   46,   47,\n          48,   49,   50,   51,   52,   53,   54,   55,   56,   57,   58,   59,\n          60,   61,   62,   63,   64,   65,   66,   67,   68,   69,   70,   71,\n          72,   73,   74,   75,   76,   77,   78,   79,   80,   81,   82,   83,\n          84,   85,   86,   87,   88,   89,   90,   91,   92,   93,   94,   95,\n          96,   97,   98,   99,  100,  101,  102,  103,  104,  105,  106,  107,\n         108,  109,  110,  111,  112,  113,  114,  115,  116,  117,  118,  119,\n         120,  121,  122,  123,  124,  125,  126,  127,  128,  129,  130,  131,\n         132,  133,  134,  135,  136,  137,  138,  139,  140,  141,  142,  143,\n         144,  145,  146,  147,  148,  149,  150,  151,  152,  153,  154,  155,\n         156,  157,  158,  159,  160,  161,  162,  163,  164,  165,  166,  167,\n         168,  169,  170,  171,  172,  173,  174,  175,  176,  177,  178,  179,\n         180,  181,  182,  183,  184,  185,  186,  187,  188,  189,  190,  191,\n         192,  193,  194,  195,  196,  197,  198,  199,  200,  201,  202,  203,\n         204,  205,  206,  207,  208,  209,  210,  211,  212,  213,  214,  215,\n         216,  217,  218,  219,  220,  221,  222,  223,  224,  225,  226,  227,\n         228,  229,  230,  231,  232,  233,  234,  235,  236,  237,  238,  239,\n         240,  241,  242,  243,  244,  245,  246,  247,  248,  249,  250,  251,\n         252,  253,  254,  255,  256,  257,  258,  259,  260,  261,  262,  263,\n         264,  265,  266,  267,  268,  269,  270,  271,  272,  273,  274,  275,\n         276,  277,  278,  279,  280,  281,  282,  283,  284,  285,  286,  287,\n         288,  289,  290,  291,  292,  293,  294,  295,  296,  297,  298,  299,\n         300,  301,  302,  303,  304,  305,  306,  307,  308,  309,  310,  311,\n         312,  313,  314,  315,  316,  317,  318,  319,  320,  321,  322,  323,\n         324,  325,  326,  327,  328,  329,  330,  331,  332,  333,  334,  335,\n         336,  337,  338,  339,  340,  341,  342,  343,  344,  345,  346,  347,\n         348,  349,  350,  351,  352,  353,  354,  355,  356,  357,  358,  359,\n         360,  361,  362,  363,  364,  365,  366,  367,  368,  369,  370,  371,\n         372,  373,  374,  375,  376,  377,  378,  379,  380,  381,  382,  383,\n         384,  385,  386,  387,  388,  389,  390,  391,  392,  393,  394,  395,\n         396,  397,  398,  399,  400,  401,  402,  403,  404,  405,  406,  407,\n         408,  409,  410,  411,  412,  413,  414,  415,  416,  417,  418,  419,\n         420,  421,  422,  423,  424,  425,  426,  427,  428,  429,  430,  431,\n         432,  433,  434,  435,  436,  437,  438,  439,  440,  441,  442,  443,\n         444,  445,  446,  447,  448,  449,  450,  451,  452,  453,  454,  455,\n         456,  457,  458,  459,  460,  461,  462,  463,  464,  465,  466,  467,\n         468,  469,  470,  471,  472,  473,  474,  475,  476,  477,  478,  479,\n         480,  481,  482,  483,  484,  485,  486,  487,  488,  489,  490,  491,\n         492,  493,  494,  495,  496,  497,  498,  499,  500,  501,  502,  503,\n         504,  505,  506,  507,  508,  509,  510,  511,  512,  513,  514,  515,\n         516,  517,  518,  519,  520,  521,  522,  523,  524,  525,  526,  527,\n         528,  529,  530,  531,  532,  533,  534,  535,  536,  537,  538,  539,\n         540,  541,  542,  543,  544,  545,  546,  547,  548,  549,  550,  551,\n         552,  553,  554,  555,  556,  557,  558,  559,  560,  561,  562,  563,\n         564,  565,  566,  567,  568,  569,  570,  571,  572,  573,  574,  575,\n         576,  577,  578,  579,  580,  581,  582,  583,  584,  585,  586,  587,\n         588,  589,  590,  591,  592,  593,  594,  595,  596,  597,  598,  599,\n         600,  601,  602,  603,  604,  605,  606,  607,  608,  609,  610,  611,\n         612,  613,  614,  615,  616,  617,  618,  619,  620,  621,  622,  623,\n         624,  625,  626,  627,  628,  629,  630,  631,  632,  633,  634,  635,\n         636,  637,  638,  639,  640,  641,  642,  643,  644,  645,  646,  647,\n         648,  649,  650,  651,  652,  653,  654,  655,  656,  657,  658,  659,\n         660,  661,  662,  663,  664,  665,  666,  667,  668,  669,  670,  671,\n         672,  673,  674,  675,  676,  677,  678,  679,  680,  681,  682,  683,\n         684,  685,  686,  687,  688,  689,  690,  691,  692,  693,  694,  695,\n         696,  697,  698,  699,  700,  701,  702,  703,  704,  705,  706,  707,\n         708,  709,  710,  711,  712,  713,  714,  715,  716,  717,  718,  719,\n         720,  721,  722,  723,  724,  725,  726,  727,  728,  729,  730,  731,\n         732,  733,  734,  735,  736,  737,  738,  739,  740,  741,  742,  743,\n         744,  745,  746,  747,  748,  749,  750,  751,  752,  753,  754,  755,\n         756,  757,  758,  759,  760,  761,  762,  763,  764,  765,  766,  767,\n         768,  769,  770,  771,  772,  773,  774,  775,  776,  777,  778,  779,\n         780,  781,  782,  783,  784,  785,  786,  787,  788,  789,  790,  791,\n         792,  793,  794,  795,  796,  797,  798,  799,  800,  801,  802,  803,\n         804,  805,  806,  807,  808,  809,  810,  811,  812,  813,  814,  815,\n         816,  817,  818,  819,  820,  821,  822,  823,  824,  825,  826,  827,\n         828,  829,  830,  831,  832,  833,  834,  835,  836,  837,  838,  839,\n         840,  841,  842,  843,  844,  845,  846,  847,  848,  849,  850,  851,\n         852,  853,  854,  855,  856,  857,  858,  859,  860,  861,  862,  863,\n         864,  865,  866,  867,  868,  869,  870,  871,  872,  873,  874,  875,\n         876,  877,  878,  879,  880,  881,  882,  883,  884,  885,  886,  887,\n         888,  889,  890,  891,  892,  893,  894,  895,  896,  897,  898,  899,\n         900,  901,  902,  903,  904,  905,  906,  907,  908,  909,  910,  911,\n         912,  913,  914,  915,  916,  917,  918,  919,  920,  921,  922,  923,\n         924,  925,  926,  927,  928,  929,  930,  931,  932,  933,  934,  935,\n         936,  937,  938,  939,  940,  941,  942,  943,  944,  945,  946,  947,\n         948,  949,  950,  951,  952,  953,  954,  955,  956,  957,  958,  959,\n         960,  961,  962,  963,  964,  965,  966,  967,  968,  969,  970,  971,\n         972,  973,  974,  975,  976,  977,  978,  979,  980,  981,  982,  983,\n         984,  985,  986,  987,  988,  989,  990,  991,  992,  993,  994,  995,\n         996,  997,  998,  999, 1000])"},
    {"profile then precision", "{profile = \"full\", precision = 1}", "ember.tensor({1.25, 2.75})",
     "tensor([1.2, 2.8])"},
    {"threshold inf", "{threshold = math.huge}", "ember.arange(1200):reshape(2, 600):sum(2)",
     "tensor([179700, 539700])"},
}

describe("ember.set_printoptions", function()
    local function with_options(opts, fn)
        ember.set_printoptions({profile = "default"})
        ember.set_printoptions(opts)
        local ok, err = pcall(fn)
        ember.set_printoptions({profile = "default"})
        assert(ok, err)
    end

    for _, c in ipairs(option_cases) do
        local name, opts_src, src, want = c[1], c[2], c[3], c[4]
        it(name .. ": " .. opts_src, function()
            local opts = load("return " .. opts_src, "=opts", "t", {math = math})()
            local t = load("return " .. src, "=case", "t", {ember = ember})()
            with_options(opts, function() assert.are.equal(want, tostring(t)) end)
        end)
    end

    it("takes PyTorch's positions, and each call leaves unnamed options as they were but sci_mode", function()
        with_options({}, function()
            ember.set_printoptions(2, 5)          -- precision, threshold
            assert.are.equal("tensor([0.50, 1.50])", tostring(ember.tensor({0.5, 1.5})))
            assert.are.equal("tensor([0, 1, 2,  ..., 7, 8, 9])", tostring(ember.arange(10)))
            ember.set_printoptions({sci_mode = true})
            assert.are.equal("tensor([5.00e-01, 1.50e+00])", tostring(ember.tensor({0.5, 1.5})))
            -- a later call without sci_mode chooses the notation from the values again (PyTorch too)
            ember.set_printoptions({linewidth = 80})
            assert.are.equal("tensor([0.50, 1.50])", tostring(ember.tensor({0.5, 1.5})))
        end)
    end)

    it("refuses bad options, naming the op and the option", function()
        local bad = {
            {{profile = "long"}, 'profile must be "default", "short" or "full"'},
            {{precision = 1.5}, "precision must be an integer"},
            {{precision = -1}, "precision must be 0 to 30"},
            {{precision = 31}, "precision must be 0 to 30"},
            {{threshold = -1}, "threshold must be a number >= 0"},
            {{threshold = "x"}, "threshold must be a number"},
            {{edgeitems = 0}, "edgeitems must be a positive integer"},
            {{linewidth = 0}, "linewidth must be a positive integer"},
            {{sci_mode = 1}, "sci_mode"},
            {{colour = true}, "unknown option 'colour'"},
        }
        for _, b in ipairs(bad) do
            local ok, err = pcall(ember.set_printoptions, b[1])
            assert.is_false(ok)
            assert.truthy(err:find("ember.set_printoptions: ", 1, true), err)
            assert.truthy(err:find(b[2], 1, true), err)
        end
        -- and a refused call changes nothing
        assert.are.equal("tensor([0.5000, 1.5000])", tostring(ember.tensor({0.5, 1.5})))
    end)
end)

--[==[ generator (run with /usr/bin/python3; PyTorch 1.13):
# Prints the Lua table of format cases: each PyTorch expression is printed by
# PyTorch's own code (torch._tensor_str), with the dtype named as ember names it.
import torch, torch._tensor_str as ts
nan, inf = float('nan'), float('inf')
def ember_str(t):
    indent, suffixes = 7, []
    name = str(t.dtype).replace('torch.', '')
    if t.numel() == 0:
        if t.dim() != 1: suffixes.append('size=' + str(tuple(t.shape)))
        if t.dtype != torch.get_default_dtype(): suffixes.append('dtype=' + name)
        body = '[]'
    else:
        if t.dtype not in (torch.get_default_dtype(), torch.int64, torch.bool):
            suffixes.append('dtype=' + name)
        body = ts._tensor_str(t, indent)
    s = ts._add_suffixes('tensor(' + body, suffixes, indent, force_newline=False)
    return s
cases = [
 ("2-d float", "ember.tensor({{1.5, 2}, {3, 4}})", "torch.tensor([[1.5, 2], [3, 4]])"),
 ("int64 vector", "ember.tensor({1, 2, 3})", "torch.tensor([1, 2, 3])"),
 ("integral floats", "ember.tensor({1.0, 2.0, 3.0})", "torch.tensor([1., 2., 3.])"),
 ("0-d float", "ember.tensor(3.5)", "torch.tensor(3.5)"),
 ("0-d int", "ember.tensor(7)", "torch.tensor(7)"),
 ("0-d integral float", "ember.tensor(2.0)", "torch.tensor(2.0)"),
 ("0-d float64", 'ember.tensor(0.1, {dtype = "float64"})', "torch.tensor(0.1, dtype=torch.float64)"),
 ("0-d bool", 'ember.tensor(true)', "torch.tensor(True)"),
 ("0-d sci", 'ember.tensor(1e-7)', "torch.tensor(1e-7)"),
 ("empty 1-d", "ember.zeros(0)", "torch.zeros(0)"),
 ("empty 2-d", "ember.zeros(0, 3)", "torch.zeros(0, 3)"),
 ("empty 3-d int64", 'ember.zeros(2, 0, 3, {dtype = "int64"})', "torch.zeros(2, 0, 3, dtype=torch.int64)"),
 ("empty int64", 'ember.zeros(0, {dtype = "int64"})', "torch.zeros(0, dtype=torch.int64)"),
 ("empty bool", 'ember.zeros(0, {dtype = "bool"})', "torch.zeros(0, dtype=torch.bool)"),
 ("empty float64", 'ember.zeros(4, 0, {dtype = "float64"})', "torch.zeros(4, 0, dtype=torch.float64)"),
 ("float64", 'ember.tensor({1.5, 2, 1/3}, {dtype = "float64"})', "torch.tensor([1.5, 2, 1/3], dtype=torch.float64)"),
 ("int32", 'ember.tensor({1, -20, 300}, {dtype = "int32"})', "torch.tensor([1, -20, 300], dtype=torch.int32)"),
 ("uint8", 'ember.tensor({0, 7, 255}, {dtype = "uint8"})', "torch.tensor([0, 7, 255], dtype=torch.uint8)"),
 ("bool", "ember.tensor({true, false, true})", "torch.tensor([True, False, True])"),
 ("bool all true", "ember.tensor({true, true})", "torch.tensor([True, True])"),
 ("bool 2-d", "ember.tensor({{true, false}, {false, false}})", "torch.tensor([[True, False], [False, False]])"),
 ("float16", 'ember.tensor({1.5, 2, 0.1}, {dtype = "float16"})', "torch.tensor([1.5, 2, 0.1], dtype=torch.float16)"),
 ("bfloat16", 'ember.tensor({1.5, 2, 0.1}, {dtype = "bfloat16"})', "torch.tensor([1.5, 2, 0.1], dtype=torch.bfloat16)"),
 ("negatives", "ember.tensor({-1.5, 2.25, -3})", "torch.tensor([-1.5, 2.25, -3])"),
 ("negative ints", "ember.tensor({-1, 20, -300})", "torch.tensor([-1, 20, -300])"),
 ("big int64", "ember.tensor({9007199254740993, -9007199254740993})", "torch.tensor([9007199254740993, -9007199254740993])"),
 ("rounding", "ember.tensor({0.12345, 2.71828, 1/3})", "torch.tensor([0.12345, 2.71828, 1/3])"),
 ("sci small", "ember.tensor({1e-5, 1.0})", "torch.tensor([1e-5, 1.0])"),
 ("sci ratio", "ember.tensor({123456.789, 1.5})", "torch.tensor([123456.789, 1.5])"),
 ("fixed wide", "ember.tensor({1234.5678, 1.5})", "torch.tensor([1234.5678, 1.5])"),
 ("sci large", "ember.tensor({1e9, 2.5})", "torch.tensor([1e9, 2.5])"),
 ("sci mixed signs", "ember.tensor({{-1e-6, 3.25e5}, {7.5, -0.5}})", "torch.tensor([[-1e-6, 3.25e5], [7.5, -0.5]])"),
 ("integral sci large", "ember.tensor({1e10, 1.0, 2.0})", "torch.tensor([1e10, 1., 2.])"),
 ("integral sci ratio", "ember.tensor({5000.0, 1.0})", "torch.tensor([5000., 1.])"),
 ("integral wide", "ember.tensor({999.0, 1.0, -5.0})", "torch.tensor([999., 1., -5.])"),
 ("float64 sci", 'ember.tensor({1e-300, 1e300}, {dtype = "float64"})', "torch.tensor([1e-300, 1e300], dtype=torch.float64)"),
 ("threshold 1e-4", "ember.tensor({0.0001, 0.5})", "torch.tensor([0.0001, 0.5])"),
 ("just above 1e-4", "ember.tensor({0.00011, 0.5})", "torch.tensor([0.00011, 0.5])"),
 ("tiny only", "ember.tensor({1e-30})", "torch.tensor([1e-30])"),
 ("nan inf", "ember.tensor({0/0, 1/0, -1/0, 1.5})", "torch.tensor([nan, inf, -inf, 1.5])"),
 ("nan integral", "ember.tensor({0/0, 1.0, -2.0})", "torch.tensor([nan, 1., -2.])"),
 ("inf sci", "ember.tensor({1/0, 1e-6, 1.0})", "torch.tensor([inf, 1e-6, 1.])"),
 ("nan only", "ember.tensor({0/0, 0/0})", "torch.tensor([nan, nan])"),
 ("inf and zero", "ember.tensor({-1/0, 0.0})", "torch.tensor([-inf, 0.])"),
 ("all zeros", "ember.zeros(3)", "torch.zeros(3)"),
 ("zeros 2-d", "ember.zeros(2, 2)", "torch.zeros(2, 2)"),
 ("negative zero", "ember.tensor({-0.0, 1.5})", "torch.tensor([-0.0, 1.5])"),
 ("eye", "ember.eye(3)", "torch.eye(3)"),
 ("full", "ember.full({2, 2}, 7.0)", "torch.full((2, 2), 7.)"),
 ("full int", "ember.full({2, 2}, 7)", "torch.full((2, 2), 7)"),
 ("3-d int", "ember.arange(24):reshape(2, 3, 4)", "torch.arange(24).reshape(2, 3, 4)"),
 ("3-d float", "ember.arange(0, 12, 0.5):reshape(2, 3, 4)", "torch.arange(0, 12, 0.5).reshape(2, 3, 4)"),
 ("4-d", "ember.arange(16):reshape(2, 2, 2, 2)", "torch.arange(16).reshape(2, 2, 2, 2)"),
 ("size-1 dims", "ember.tensor({{{1.5}}})", "torch.tensor([[[1.5]]])"),
 ("wrap int", "ember.arange(100)", "torch.arange(100)"),
 ("wrap float", "ember.arange(0, 45, 1.5)", "torch.arange(0, 45, 1.5)"),
 ("wrap 2-d rows", "ember.arange(0, 60, 1.5):reshape(2, 20)", "torch.arange(0, 60, 1.5).reshape(2, 20)"),
 ("wrap 3-d rows", "ember.arange(0, 60, 1.5):reshape(2, 1, 20)", "torch.arange(0, 60, 1.5).reshape(2, 1, 20)"),
 ("summarised 1-d", "ember.arange(2000)", "torch.arange(2000)"),
 ("summarised 1-d float", "ember.arange(0, 500.5, 0.5)", "torch.arange(0, 500.5, 0.5)"),
 ("summarised 2-d", "ember.arange(2000):reshape(40, 50)", "torch.arange(2000).reshape(40, 50)"),
 ("summarised 3-d", "ember.arange(2048):reshape(8, 16, 16)", "torch.arange(2048).reshape(8, 16, 16)"),
 ("summarised short inner dim", "ember.arange(1005):reshape(201, 5)", "torch.arange(1005).reshape(201, 5)"),
 ("summarised short outer dim", "ember.arange(0, 1010, 1.0):reshape(2, 505)", "torch.arange(0, 1010, 1.0).reshape(2, 505)"),
 ("summarised formatter sees edges", "ember.arange(1, 1002):float()", "torch.arange(1, 1002).float()"),
 ("summarised bool", 'ember.zeros(1001, {dtype = "bool"})', "torch.zeros(1001, dtype=torch.bool)"),
 ("exactly threshold", "ember.arange(1000)", "torch.arange(1000)"),
 ("transposed", "ember.arange(6):reshape(2, 3):t()", "torch.arange(6).reshape(2, 3).t()"),
 ("narrowed", "ember.arange(12):reshape(3, 4):narrow(2, 2, 2)", "torch.arange(12).reshape(3, 4).narrow(1, 1, 2)"),
 ("expanded", "ember.tensor({1.5, 2, 3}):expand(2, 3)", "torch.tensor([1.5, 2, 3]).expand(2, 3)"),
 ("permuted 3-d", "ember.arange(0, 12, 0.25):reshape(2, 3, 8):permute(3, 1, 2)", "torch.arange(0, 12, 0.25).reshape(2, 3, 8).permute(2, 0, 1)"),
 ("summarised transposed", "ember.arange(0, 2000, 1.0):reshape(40, 50):t()", "torch.arange(0, 2000, 1.0).reshape(40, 50).t()"),
 ("int32 suffix wraps", 'ember.arange(10, 28, {dtype = "int32"})', "torch.arange(10, 28, dtype=torch.int32)"),
 ("float64 suffix wraps", 'ember.arange(0, 24, 1.5, {dtype = "float64"}):reshape(2, 8)', "torch.arange(0, 24, 1.5, dtype=torch.float64).reshape(2, 8)"),
 ("float64 suffix wraps 1-d", 'ember.arange(10, 17.5, 1.5, {dtype = "float64"})', "torch.arange(10, 17.5, 1.5, dtype=torch.float64)"),
 ("int32 suffix fits", 'ember.arange(20, {dtype = "int32"})', "torch.arange(20, dtype=torch.int32)"),
 ("float64 multi-line suffix", 'ember.arange(0, 18, 1.5, {dtype = "float64"})', "torch.arange(0, 18, 1.5, dtype=torch.float64)"),
 ("float16 summarised", 'ember.arange(0, 1100, 1, {dtype = "float16"})', "torch.arange(0, 1100, 1, dtype=torch.float16)"),
]
def lq(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'
print("local cases = {")
for name, lua, tsrc in cases:
    if tsrc is None: continue
    t = eval(tsrc)
    s = ember_str(t)
    ref = repr(t).replace('torch.', '')
    if ref != s: print("-- NOTE: differs from repr (suffix wrap):", name, file=__import__('sys').stderr)
    print("    {%s, %s,\n     %s}," % (lq(name), lq(lua), lq(s)))
print("}")
]==]

--[==[ second generator: the print-option cases (run with scripts/bench/torch-python; PyTorch 2.15):
# Prints the Lua table of print-option cases: each PyTorch expression printed by
# PyTorch's own printer (torch._tensor_str) after torch.set_printoptions(**opts),
# with the dtype named as ember names it.
import torch, torch._tensor_str as ts
def ember_str(t):
    indent, suffixes = 7, []
    name = str(t.dtype).replace('torch.', '')
    if t.dtype not in (torch.get_default_dtype(), torch.int64, torch.bool):
        suffixes.append('dtype=' + name)
    body = ts._tensor_str(t, indent)
    return ts._add_suffixes('tensor(' + body, suffixes, indent, force_newline=False)
cases = [
 ("precision 2", "{precision = 2}", dict(precision=2), "ember.tensor({1.12345, 2.5, -3.75})", "torch.tensor([1.12345, 2.5, -3.75])"),
 ("precision 0", "{precision = 0}", dict(precision=0), "ember.tensor({1.6, 2.5, -3.75})", "torch.tensor([1.6, 2.5, -3.75])"),
 ("precision 10 float64", "{precision = 10}", dict(precision=10), 'ember.tensor({1/3, 2/3}, {dtype = "float64"})', "torch.tensor([1/3, 2/3], dtype=torch.float64)"),
 ("precision 2 sci", "{precision = 2}", dict(precision=2), "ember.tensor({1.12345, 100000.0})", "torch.tensor([1.12345, 100000.0])"),
 ("sci_mode on", "{sci_mode = true}", dict(sci_mode=True), "ember.tensor({1.0, 2.5})", "torch.tensor([1.0, 2.5])"),
 ("sci_mode on integral", "{sci_mode = true}", dict(sci_mode=True), "ember.tensor({1.0, 2.0})", "torch.tensor([1.0, 2.0])"),
 ("sci_mode off", "{sci_mode = false}", dict(sci_mode=False), "ember.tensor({1e-9, 1e9, 2.5})", "torch.tensor([1e-9, 1e9, 2.5])"),
 ("sci_mode off integral", "{sci_mode = false}", dict(sci_mode=False), "ember.tensor({1e10, 1.0})", "torch.tensor([1e10, 1.0])"),
 ("sci_mode off float64 huge", "{sci_mode = false}", dict(sci_mode=False), 'ember.tensor({1e300, -1.5}, {dtype = "float64"})', "torch.tensor([1e300, -1.5], dtype=torch.float64)"),
 ("sci_mode off precision 30", "{sci_mode = false, precision = 30}", dict(sci_mode=False, precision=30), 'ember.tensor({-1.7976931348623157e308}, {dtype = "float64"})', "torch.tensor([-1.7976931348623157e308], dtype=torch.float64)"),
 ("sci_mode on ints untouched", "{sci_mode = true}", dict(sci_mode=True), "ember.tensor({1, 20})", "torch.tensor([1, 20])"),
 ("threshold 5", "{threshold = 5}", dict(threshold=5), "ember.arange(10)", "torch.arange(10)"),
 ("threshold 5 edgeitems 1", "{threshold = 5, edgeitems = 1}", dict(threshold=5, edgeitems=1), "ember.arange(0, 10, 1.0)", "torch.arange(0, 10, 1.0)"),
 ("edgeitems 1 2-d", "{threshold = 5, edgeitems = 1}", dict(threshold=5, edgeitems=1), "ember.arange(24):reshape(4, 6)", "torch.arange(24).reshape(4, 6)"),
 ("linewidth 20", "{linewidth = 20}", dict(linewidth=20), "ember.arange(0, 12, 1.0)", "torch.arange(0, 12, 1.0)"),
 ("linewidth 20 suffix", "{linewidth = 20}", dict(linewidth=20), 'ember.arange(6, {dtype = "int32"})', "torch.arange(6, dtype=torch.int32)"),
 ("profile short", '{profile = "short"}', dict(profile="short"), "ember.tensor({{1.23456, 2, 3}, {4, 5, 6.5}})", "torch.tensor([[1.23456, 2, 3], [4, 5, 6.5]])"),
 ("profile short summarised", '{profile = "short"}', dict(profile="short"), "ember.arange(2000)", "torch.arange(2000)"),
 ("profile full", '{profile = "full"}', dict(profile="full"), "ember.arange(1001)", "torch.arange(1001)"),
 ("profile then precision", '{profile = "full", precision = 1}', dict(profile="full", precision=1), "ember.tensor({1.25, 2.75})", "torch.tensor([1.25, 2.75])"),
 ("threshold inf", "{threshold = math.huge}", dict(threshold=float('inf')), "ember.arange(1200):reshape(2, 600):sum(2)", "torch.arange(1200).reshape(2, 600).sum(1)"),
]
def lq(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n') + '"'
print("local option_cases = {")
for name, lopts, opts, lua, tsrc in cases:
    torch.set_printoptions(profile="default")
    torch.set_printoptions(**opts)
    s = ember_str(eval(tsrc))
    torch.set_printoptions(profile="default")
    print("    {%s, %s, %s,\n     %s}," % (lq(name), lq(lopts), lq(lua), lq(s)))
print("}")
]==]
