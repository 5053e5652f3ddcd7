"""hack/crd/trim_descriptions.py: the descriptions inside pod and claim templates go, every other
stays, and the rest of controller-gen's text is left as it was."""

from __future__ import annotations

import yaml

from tests.support.hack_modules import hack_module

TEXT = """\
spec:
  description: |-
    Kept: the project's own.
    On two lines.
  properties:
    roles:
      items:
        properties:
          volumeClaimTemplates:
            description: Dropped, and its continuation
              line too.
            items:
              description: 'Dropped: quoted.'
              properties:
                description:
                  description: Dropped (a field named description stays).
                  type: string
              type: object
            type: array
          workerTemplate:
            description: |-
              Dropped.

              With a blank line.
            properties:
              spec:
                description: Dropped.
                type: object
            type: object
          size:
            description: Kept, after the templates.
            type: integer
        type: object
      type: array
  type: object
"""


def test_drops_the_descriptions_of_templates_only():
    trim = hack_module("crd/trim_descriptions.py").trim
    trimmed = yaml.safe_load(trim(TEXT))
    role = trimmed["spec"]["properties"]["roles"]["items"]["properties"]
    assert trimmed["spec"]["description"] == "Kept: the project's own.\nOn two lines."
    assert role["size"] == {"description": "Kept, after the templates.", "type": "integer"}
    assert role["workerTemplate"] == {"properties": {"spec": {"type": "object"}}, "type": "object"}
    assert role["volumeClaimTemplates"] == {
        "items": {"properties": {"description": {"type": "string"}}, "type": "object"}, "type": "array"}


def test_leaves_the_other_lines_as_they_were():
    trim = hack_module("crd/trim_descriptions.py").trim
    dropped = ("Dropped", "line too.", "With a blank line.")
    kept = [line for line in TEXT.split("\n") if not any(part in line for part in dropped)
            and line != "            description: |-"]  # the workerTemplate's
    trimmed = trim(TEXT).split("\n")
    assert [line for line in kept if line.strip()] == [line for line in trimmed if line.strip()]
