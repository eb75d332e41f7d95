# The browser speed test in a container, configured like speedtest-x:
#   docker build -t wirespeed .
#   docker run -p 9001:80 -e MAX_LOG_COUNT=100 -e SAME_IP_MULTI_LOGS=false \
#              -v wirespeed:/var/lib/wirespeed wirespeed
# Results live in the volume at /var/lib/wirespeed (outside anything served over HTTP).
# Behind a reverse proxy, pass its network: -e TRUSTED_PROXY=172.17.0.1/32.

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p wirespeed \
 && install -Dm755 target/release/wirespeed /out/wirespeed

FROM debian:bookworm-slim
RUN useradd --system --create-home --home-dir /var/lib/wirespeed wirespeed
COPY --from=build /out/wirespeed /usr/local/bin/wirespeed
COPY contrib/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV WEBPORT=80 \
    MAX_LOG_COUNT=100 \
    SAME_IP_MULTI_LOGS=false \
    WIRESPEED_DB=/var/lib/wirespeed/results.db
VOLUME /var/lib/wirespeed
EXPOSE 80
# Docker lets unprivileged processes bind ports below 1024 inside a container.
USER wirespeed
ENTRYPOINT ["docker-entrypoint.sh"]
