"""``brokerlab new-plugin``: a ready third-party plugin package, one kind per extension point.

The generated package imports only brokerlab's public surface (``brokerlab`` and the contract kit
``brokerlab.testing``), registers itself in the entry-point group ``brokerlab``, owns its keys
under ``sim.<name>.`` and installs and passes its tests against the installed brokerlab without a
package index serving brokerlab. The templates live in ``templates/`` as ``*.tmpl`` files
(``string.Template`` placeholders): ``common/`` for every kind, one folder per kind.
"""

from __future__ import annotations

from brokerlab.scaffold.kinds import KINDS, Kind
from brokerlab.scaffold.names import PluginNames, ScaffoldError, plugin_names
from brokerlab.scaffold.writer import GeneratedPlugin, generate

__all__ = [
    "KINDS",
    "GeneratedPlugin",
    "Kind",
    "PluginNames",
    "ScaffoldError",
    "generate",
    "plugin_names",
]
