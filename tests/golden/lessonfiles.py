"""lessonfiles.py: what the newer reference scripts (make_reference_softcap.py,
make_reference_ropescale.py) share: the lessons they make, written out one
NAME.json a lesson. make_reference_v4.py writes its own the same way (the
v* scripts are left as they are)."""
import json
import os


def write_lessons(folder, out):
    """Each lesson of out (name -> lesson) as folder/NAME.json: indented by 1, UTF-8 as it is, a newline at the end."""
    os.makedirs(folder, exist_ok=True)
    for name, lesson in out.items():
        with open(os.path.join(folder, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(lesson, f, ensure_ascii=False, indent=1)
            f.write("\n")


def make_all(folder, lessons, reference):
    """lessons(folder) writes the lessons; then each one's reference(path) beside it, as NAME.ref.json."""
    lessons(folder)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json") and not name.endswith(".ref.json"):
            path = os.path.join(folder, name)
            with open(path[:-5] + ".ref.json", "w") as f:
                json.dump(reference(path), f, indent=1, allow_nan=False)
                f.write("\n")
