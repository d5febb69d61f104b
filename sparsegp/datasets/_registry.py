"""Where each benchmark data set comes from: pinned URLs, SHA-256, licence, size, papers.

Every URL but MNIST's names an immutable object: a GitHub raw URL pinned to a commit.
MNIST's archives come from a stable mirror, held to the SHA-256 sums published for the
originals. The SHA-256 of a file whose source repository could be read here was computed from
that repository's bytes at the pinned commit, e.g. for USPS::

    git --git-dir=<snapshot of robintux/Datasets4StackOverFlowQuestions> \\
        show 57a571f9d984e0bd730683dfa014751fbc28b1b7:zip.train.gz | sha256sum

Cawley's ``benchmarks.mat`` (all 13 Raetsch sets) is larger than the snapshots available here
hold, so its bytes could not be checked from here: its SHA-256 is the one the PyPI package
scikit-datasets publishes for the same file, and its git blob id (from the repository's tree
at the pinned commit) is recorded beside it. A file with ``sha256=None`` (the 2008 US flights,
whose host is not a code repository) is trusted on its first download and its hash recorded
then (:func:`sparsegp.datasets.fetch`).
"""
from dataclasses import dataclass, field

__all__ = ["RemoteFile", "DatasetSource", "REGISTRY", "registered_names"]

_GH = "https://raw.githubusercontent.com"

# Papers, by the seed of this project that reproduces them (README "What it implements").
_GFITC = "Naish-Guzman & Holden 2007 (seed 000)"
_MULTICLASS = "Villacampa-Calvo & Hernandez-Lobato 2017 (seed 002)"
_IVM = "Lawrence, Seeger & Herbrich 2003 (seed 003)"
_STAGEWISE = "Sundararajan & Shevade (seed 004)"
_BESIDE = "none directly: the full ESL copy, kept to check the paper's "


@dataclass(frozen=True)
class RemoteFile:
    """One file to download.

    Attributes
    ----------
    fname : str
        Name of the file in the download cache and, with a base URL override, the path
        appended to that base.
    url : str or None
        Pinned URL; None when there is no download route yet (the manual route is in
        ``manual``).
    sha256 : str or None
        Hex SHA-256 of the exact bytes; None: record at first download.
    size : int or None
        Bytes, when known.
    checked_here : bool
        True when the hash was computed here from the source repository's bytes.
    manual : str
        How to get the file by hand (said in every download error).
    git_blob : str
        Git blob id of the file at the pinned commit, when known (a second identity check
        for files whose bytes could not be read here).
    """

    fname: str
    url: str | None
    sha256: str | None
    size: int | None = None
    checked_here: bool = False
    manual: str = ""
    git_blob: str = ""


@dataclass(frozen=True)
class DatasetSource:
    """How one ``<name>.npz`` is made: files to fetch, the converter, and what to cite.

    Attributes
    ----------
    name : str
        Base name of the ``.npz`` (as :func:`sparsegp.datasets.load_dataset` reads it).
    files : tuple of RemoteFile
        Empty when the set cannot be fetched yet.
    converter : str
        Key of the conversion in :mod:`sparsegp.datasets._fetch` ("" when not fetchable).
    options : dict
        Arguments of that conversion (member names, class names, ...).
    source, licence, papers : str
        What the README's data table shows.
    """

    name: str
    files: tuple
    converter: str
    source: str
    licence: str
    papers: str
    options: dict = field(default_factory=dict)

    @property
    def fetchable(self):
        return bool(self.files) and all(f.url for f in self.files)


_BENCHMARKS_MAT = RemoteFile(
    fname="benchmarks.mat",
    url=f"{_GH}/tdiethe/gunnar_raetsch_benchmark_datasets/"
        "66aa4e766b60bf031dfd27b9cbe97307cdf7242e/benchmarks.mat",
    sha256="47c19e4bc4716edc4077cfa5ea61edf4d02af4ec51a0ecfe035626ae8b561c75",
    size=None,
    checked_here=False,
    git_blob="4b54cae3f99419fba1f27f98f7235a799d6580ce",
    manual="benchmarks.mat of github.com/tdiethe/gunnar_raetsch_benchmark_datasets "
           "(commit 66aa4e76; Cawley's MATLAB v7 repackaging of Raetsch's 13 sets)",
)

_ESL = "robintux/Datasets4StackOverFlowQuestions/57a571f9d984e0bd730683dfa014751fbc28b1b7"
_ESL_SOURCE = ("ESL book copy in robintux/Datasets4StackOverFlowQuestions @ 57a571f9 "
               "(the repository's HEAD holds Git LFS pointers only)")


def _esl(fname, sha256, size):
    return RemoteFile(fname, f"{_GH}/{_ESL}/{fname}", sha256, size, checked_here=True,
                      manual=f"{fname} of the Elements of Statistical Learning data page")


# The ESL sets, each an official train/test pair of files: name -> (conversion, licence,
# papers, conversion options, files as (fname, size, sha256)).
_ESL_SETS = {
    "usps": ("esl_digits", "none stated (ESL data page)", _GFITC, {},
             (("zip.train.gz", 1829071,
               "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16"),
              ("zip.test.gz", 439208,
               "8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f"))),
    "vowel": ("esl_table", "none stated (ESL data page; Deterding data)", _BESIDE + "vowel6",
              {"classes": ("hid", "hId", "hEd", "hAd", "hYd", "had", "hOd", "hod", "hUd",
                           "hud", "hed"), "table": True},
              (("vowel.train", 36858,
                "6285d72a3ec5af71286e6e0a778b836c229e3c41d6e0c2076294ee671e3ed9fb"),
               ("vowel.test", 32338,
                "94720047d8e1d1f485b882347ad20b9b62fd04b080c855e23a10a4804e886f1b"))),
    "waveform_esl": ("esl_table", "none stated (ESL data page)", _BESIDE + "waveform3",
                     {"classes": None, "table": False},
                     (("waveform.train", 46409,
                       "ac5d64c6c1d9c7afeafa9dea71caa9865dca67cd4732e16c17fbc1751dcf7d18"),
                      ("waveform.test", 77419,
                       "90420d794f6399ae4e70d60cb19e3921f58afec8386e4dbed80e71fe21bc8861"))),
}

_MULTICLASS_TGZ = RemoteFile(
    fname="multiclass.tgz",
    url=f"{_GH}/cvillacampa/dgps_pep/30ce21fd68f3af7b9cdb4d2a267e95c568c3ac93/"
        "datasets/multiclass.tgz",
    sha256="3ddf479e54cb87df9dd600819a382a53686dc6810235a2ee7b6928a9d7e124cf",
    size=865644,
    checked_here=True,
    manual="datasets/multiclass.tgz of github.com/cvillacampa/dgps_pep (commit 30ce21fd)",
)

_RIPLEY = "wcparham1/COSC522/8f57a9626ebe2d89af934c0b223a6d55614307a7"


def _ripley(fname, sha256, size):
    return RemoteFile(fname, f"{_GH}/{_RIPLEY}/{fname}", sha256, size, checked_here=True,
                      manual=f"Ripley's {fname} (R package MASS, or his PRNN data page)")


_RAETSCH_PAPERS = {
    "banana": f"{_GFITC}; {_IVM}; {_STAGEWISE}", "breast_cancer": f"{_GFITC}; {_STAGEWISE}",
    "diabetis": f"{_GFITC}; {_STAGEWISE}", "flare_solar": f"{_GFITC}; {_STAGEWISE}",
    "german": f"{_GFITC}; {_STAGEWISE}", "heart": f"{_GFITC}; {_STAGEWISE}",
    "image": f"{_GFITC}; {_STAGEWISE}", "ringnorm": f"{_GFITC}; {_STAGEWISE}",
    "splice": f"{_GFITC}; {_STAGEWISE}", "thyroid": f"{_GFITC}; {_STAGEWISE}",
    "titanic": f"{_GFITC}; {_STAGEWISE}", "twonorm": f"{_GFITC}; {_STAGEWISE}",
    "waveform": f"{_GFITC}; {_STAGEWISE}",
}


def _build():
    out = {}
    for short, papers in _RAETSCH_PAPERS.items():
        out["raetsch_" + short] = DatasetSource(
            "raetsch_" + short, (_BENCHMARKS_MAT,), "raetsch_mat",
            source="Cawley's benchmarks.mat, tdiethe/gunnar_raetsch_benchmark_datasets "
                   "@ 66aa4e76 (all realisations)",
            licence="MIT (repackaging); data from UCI, DELVE and STATLOG",
            papers=papers, options={"member": short})
    out["synth"] = DatasetSource(
        "synth", (_ripley("synth.tr", "c0d3bbce9af4bfc22d5f225d903808e113638569b1751a4890feb"
                          "02275005526", 7530),
                  _ripley("synth.te", "2613336c967be84b57ee75bbc1a0ee0890e32a72ae0e0784fddf7"
                          "6426a226846", 32032)),
        "ripley", source="Ripley's synth.tr/synth.te, copy in wcparham1/COSC522 @ 8f57a962",
        licence="none stated (Ripley 1996 data, redistributed in R's MASS under GPL)",
        papers=_GFITC)
    for name, (converter, licence, papers, options, files) in _ESL_SETS.items():
        out[name] = DatasetSource(
            name, tuple(_esl(fname, sha256, size) for fname, size, sha256 in files), converter,
            source=_ESL_SOURCE, licence=licence, papers=papers, options=options)
    # classes: what the shared files store for the package's codes 1..C in order. The
    # package renumbers glass's UCI types 1,2,3,5,6,7 (type 4 is absent) as 1..6, and
    # waveform3's classes are the generator's 0..2.
    packages = {"glass": ("glass", (1, 2, 3, 5, 6, 7)), "new_thyroid": ("new-thyroid", None),
                "svmguide2": ("svmguide2", None),
                "vehicle": ("vehicle", ("bus", "opel", "saab", "van")),
                "vowel6": ("vowel", ("hid", "hId", "hEd", "hAd", "hYd", "had")),
                "waveform3": ("waveform", (0, 1, 2)), "wine": ("wine", None)}
    for name, (member, classes) in packages.items():
        out[name] = DatasetSource(
            name, (_MULTICLASS_TGZ,), "fold_package",
            source="the paper authors' package, cvillacampa/dgps_pep @ 30ce21fd, "
                   f"datasets/multiclass.tgz member {member}/",
            licence="Apache-2.0 (package); data from UCI / LIBSVM",
            papers=_MULTICLASS, options={"member": member, "classes": classes})
    satellite = "emakryo/scalable_multiclass_ep/01a1beb22d6d0c0adf5a5f909832b63a67c873f1/data"
    out["satellite"] = DatasetSource(
        "satellite",
        (RemoteFile("satellite.dat", f"{_GH}/{satellite}/satellite.dat",
                    "e2c58baf8fda3e6cf0e23171992dc167ec408768620719e17a3c624a244283bd", 214119,
                    checked_here=True, manual="data/satellite.dat of "
                    "github.com/emakryo/scalable_multiclass_ep (commit 01a1beb2)"),
         RemoteFile("folds.dat", f"{_GH}/{satellite}/folds.dat",
                    "8def6ac2c1c3d622906aecaa01dba6924889cc1d9df374310f19c333f7cbecfb", 1617391,
                    checked_here=True, manual="data/folds.dat of "
                    "github.com/emakryo/scalable_multiclass_ep (commit 01a1beb2)")),
        "satellite_r",
        source="UCI Statlog sat.trn + sat.tst and the R code's 100 splits, "
               "emakryo/scalable_multiclass_ep @ 01a1beb2 data/{satellite,folds}.dat "
               "(needs the rdata package)",
        licence="none stated (repository); data UCI Statlog", papers=_MULTICLASS)
    crabs = "rodrigosantana/Curso_R_Intro_UNIVALI_2015/c44d2b4ca4112b7ac9be72ebdbf0d796a991d200"
    out["crabs"] = DatasetSource(
        "crabs",
        (RemoteFile("crabs.csv", f"{_GH}/{crabs}/crabs.csv",
                    "671c5a42604f4ad046f53ca275ee148508d20b765bbedd270191da9d3e1194fe", 6927,
                    checked_here=True, manual="MASS::crabs written with R's write.csv2"),),
        "crabs_csv",
        source="MASS crabs as written by R's write.csv2, rodrigosantana/"
               "Curso_R_Intro_UNIVALI_2015 @ c44d2b4c crabs.csv",
        licence="MIT (repository); data from R's MASS (GPL-2 or GPL-3)", papers=_GFITC)
    # LeCun's IDX archives from the mirror torchvision uses. Not a versioned URL: the
    # SHA-256 sums are the ones published for the original files (the same in torchvision,
    # TFDS and many copies); a copy whose gzip bytes differ (kelas/mnist re-compressed them)
    # is refused even when its contents are the same.
    mnist_files = (
        ("train-images-idx3-ubyte.gz", 9912422,
         "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"),
        ("train-labels-idx1-ubyte.gz", 28881,
         "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"),
        ("t10k-images-idx3-ubyte.gz", 1648877,
         "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"),
        ("t10k-labels-idx1-ubyte.gz", 4542,
         "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"))
    out["mnist"] = DatasetSource(
        "mnist",
        tuple(RemoteFile(fname, f"https://ossci-datasets.s3.amazonaws.com/mnist/{fname}",
                         sha256, size, checked_here=False,
                         manual=f"{fname} of LeCun, Cortes & Burges' MNIST page")
              for fname, size, sha256 in mnist_files),
        "mnist_idx",
        source="LeCun's IDX archives, torchvision's mirror (hash-pinned, not a versioned "
               "URL; SHA-256 as published)",
        licence="CC BY-SA 3.0 (LeCun & Cortes)", papers=_IVM)
    not_yet = {
        "flights2008": ("ASA Data Expo 2009, 2008.csv.bz2 (Harvard Dataverse "
                        "doi:10.7910/DVN/HG7NV7); not a code repository: hash recorded at "
                        "first download", "public domain (US BTS)", _MULTICLASS),
    }
    for name, (source, licence, papers) in not_yet.items():
        out[name] = DatasetSource(name, (), "", source=source, licence=licence, papers=papers)
    return out


#: name -> :class:`DatasetSource`, for every data set the five papers use.
REGISTRY = _build()


def registered_names():
    """Names of the registered data sets, sorted.

    Returns
    -------
    list of str
    """
    return sorted(REGISTRY)
