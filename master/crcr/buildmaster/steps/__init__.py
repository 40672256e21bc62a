"""The relay's build steps, in the order a build runs them (factory.py): the pull request's link, the commits a
build covers, the checkout, the build folder, each suite (within the build's time budget)."""
