"""The six golden photos: real images shipped inside installed packages, with their licences.

Licences, as the packages state them: scikit-image's data/README.txt names none; the docstrings
of skimage/data/_fetchers.py (astronaut, chelsea, coffee, rocket) do. scikit-learn's
sklearn/datasets/images/README.txt states china.jpg's and flower.jpg's.
"""

from __future__ import annotations

import importlib.metadata as _md
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Photo:
    id: str
    path: Path
    origin: str
    licence: str


LICENCES = {
    "chelsea": "CC0: 'No copyright restrictions. CC0 by the photographer (Stefan van der Walt).' "
               "(skimage/data/_fetchers.py, chelsea)",
    "coffee": "CC0: 'No copyright restrictions. CC0 by the photographer (Rachel Michetti).' "
              "Courtesy of Pikolo Espresso Bar (skimage/data/_fetchers.py, coffee)",
    "astronaut": "Public domain: NASA Great Images database, 'No known copyright restrictions, "
                 "released into the public domain.' (skimage/data/_fetchers.py, astronaut)",
    "rocket": "Public domain: captured by SpaceX and released in the public domain "
              "(skimage/data/_fetchers.py, rocket)",
    "china": "CC BY 2.0 (https://creativecommons.org/licenses/by/2.0/); attribution: 'Some "
             "rights reserved by danielbuechele', https://www.flickr.com/photos/danielbuechele/"
             "6061409035 (sklearn/datasets/images/README.txt)",
    "flower": "CC BY 2.0 (https://creativecommons.org/licenses/by/2.0/); attribution as "
              "written: 'Some rights reserved by danielbuechele', source "
              "https://www.flickr.com/photos/vultilion/6056698931 (the README's links name "
              "Flickr user vultilion) (sklearn/datasets/images/README.txt)",
}

_SOURCES = (
    # id, package (import name), distribution, directory inside the package, file
    ("chelsea", "skimage", "scikit-image", "data", "chelsea.png"),
    ("coffee", "skimage", "scikit-image", "data", "coffee.png"),
    ("astronaut", "skimage", "scikit-image", "data", "astronaut.png"),
    ("rocket", "skimage", "scikit-image", "data", "rocket.jpg"),
    ("china", "sklearn", "scikit-learn", "datasets/images", "china.jpg"),
    ("flower", "sklearn", "scikit-learn", "datasets/images", "flower.jpg"),
)


def _package_dir(import_name: str) -> Path:
    # find_spec does not import the package (importing sklearn/skimage costs seconds)
    import importlib.util

    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {import_name} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def golden_photos() -> list[Photo]:
    photos = []
    for pid, pkg, dist, sub, fn in _SOURCES:
        path = _package_dir(pkg) / sub / fn
        if not path.is_file():
            raise FileNotFoundError(f"{dist}: {sub}/{fn} not found at {path}")
        origin = f"{dist} {_md.version(dist)} {sub}/{fn}"
        photos.append(Photo(pid, path, origin, LICENCES[pid]))
    return photos
