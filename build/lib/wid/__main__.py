"""``python -m wid`` is the ``wid`` command. Its file is also the script
``spark-submit`` runs for a cluster (docs/how-to/cluster.md):

    spark-submit --master spark://host:7077 "$(python -c 'import wid.__main__ as m; print(m.__file__)')" run p.toml

Under spark-submit its ``--master`` (and every ``--conf``) holds: wid's own
``[spark] master`` applies only where nothing else chose a master."""

from wid.cli import main

if __name__ == "__main__":
    main()
