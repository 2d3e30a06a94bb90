"""What pairgate writes into a deployment: the set ``init`` writes beside a configuration
(``file_set``), the rendered agent definitions (``agent_templates``), the tracker-held pipeline
(``tracker_pipeline``, from the frame ``tracker-pipeline.yml``), and the atomic install the
``deploy-*`` commands share (``install``)."""
