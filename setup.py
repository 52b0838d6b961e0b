"""The Python package's build: CMake builds attain._core (python/*.cpp over libattain); the
package is python/attain plus the bundled data (model configs, devices, failure tables)."""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).parent.resolve()


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}",
                        "-DATTAIN_BUILD_TESTS=OFF", "-DATTAIN_BUILD_BENCH=OFF",
                        "-DATTAIN_CUDA=OFF"], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "attain_python", "-j",
                        str(os.cpu_count() or 1)], check=True)
        built = next((build / "python" / "attain").glob("_core*.so"))
        dest = pathlib.Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, dest)
        # attain/__init__.py points ATTAIN_DATA_DIR here when it is not set.
        shutil.copytree(ROOT / "data", dest.parent / "data", dirs_exist_ok=True)


# build-python/: beside CMake's build/, not in it.
setup(packages=["attain"], package_dir={"": "python"},
      options={"build": {"build_base": "build-python"}},
      ext_modules=[Extension("attain._core", sources=[])], cmdclass={"build_ext": CMakeBuild})
