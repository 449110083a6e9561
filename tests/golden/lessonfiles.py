"""lessonfiles.py: what the newer reference scripts (make_reference_softcap.py,
make_reference_ropescale.py, make_reference_localglobal.py,
make_reference_linear.py) share: the lesson file as read (with a compare
variant's keys), the lessons they make written out one NAME.json a lesson,
and each lesson's reference beside it. make_reference_v4.py writes its own
the same way (the v* scripts are left as they are)."""
import json
import os


def lesson_json(path, override=None):
    """The lesson file's JSON; a "compare" variant's keys (override, its "label" aside) replace the lesson's."""
    with open(path) as f:
        J = json.load(f)
    if override is not None:
        J.update({k: val for k, val in override.items() if k != "label"})
    return J


def write_json(path, obj, ensure_ascii=True):
    """obj as JSON: indented by 1, no NaN, a newline at the end."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=ensure_ascii, indent=1, allow_nan=False)
        f.write("\n")


def write_lessons(folder, out):
    """Each lesson of out (name -> lesson) as folder/NAME.json, UTF-8 as it is."""
    os.makedirs(folder, exist_ok=True)
    for name, lesson in out.items():
        write_json(os.path.join(folder, name + ".json"), lesson, ensure_ascii=False)


def write_references(folder, reference):
    """Beside each lesson of folder, NAME.ref.json: reference(path), as the script prints it."""
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json") and not name.endswith(".ref.json"):
            path = os.path.join(folder, name)
            write_json(path[:-5] + ".ref.json", reference(path))


def make_all(folder, lessons, reference):
    """lessons(folder) writes the lessons; then each one's reference(path) beside it, as NAME.ref.json."""
    lessons(folder)
    write_references(folder, reference)
