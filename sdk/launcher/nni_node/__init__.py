"""trialq's stand-in for NNI's ``nni_node`` package.

NNI's launcher (nni/experiment/launcher.py, used by ``Experiment.run()`` and NNI's own
``nnictl create``) imports ``nni_node`` only to find its folder, then runs
``<folder>/node [node flags] <folder>/main.js --port P --experiment-id ID ...``. In this
package ``node`` is a script that becomes ``trialq api`` with those arguments, so the
experiment runs in trialq. Put this package's parent folder first on the Python path
(``nnictl launcher path`` prints the line, ``nnictl launcher install`` writes a .pth
file) so that it is found before NNI's own ``nni_node``.
"""
