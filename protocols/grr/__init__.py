"""The k-ary randomized-response workload of ``sdp run grr``: GRR on synthetic Zipf data, with the
trusted shuffler's uniform fakes as an option (a user of ``protocols.oracles`` and
``protocols.defences``, so that neither of those base packages imports the other)."""
