# Sourced by start.sh when KAFKA_SECURE=1: makes fresh TLS material and SCRAM users for this run, and the
# broker properties of an SSL listener (client certificate required: mutual TLS) and a SASL_SSL listener
# (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512).
#
# Everything is made at start time, nothing is kept in the repository: a CA, a broker key pair signed by it (for
# 127.0.0.1 and localhost), a client key pair signed by it, with keytool (the JDK's); random passwords. What a
# client needs goes to $run_dir/client/: ca.pem, client-cert.pem, client-key.pem (PEM, as Node reads them) and
# client.json (listener addresses, user names and passwords).

# Makes the key material and passwords in $1 (the broker's data directory keeps them: the SCRAM credentials are
# stored in its metadata at format time, so a reused data directory reuses them), and copies the client's part to
# $2. Sets store_pass, plain_pass, scram256_pass and scram512_pass.
secure_material() {
  local secure="$1" client="$2"
  if [ ! -f "$secure/secrets.env" ]; then make_tls_material "$secure/tls" "$secure/client" > /dev/null; fi
  # shellcheck disable=SC1091
  . "$secure/secrets.env"
  rm -rf "$client" && cp -r "$secure/client" "$client"
}

make_tls_material() {
  local tls="$1" client="$2"
  rm -rf "$tls" "$client"
  mkdir -p "$tls" "$client"
  chmod 700 "$(dirname "$tls")" "$tls" "$client"
  store_pass="$(random_secret)"
  local kt=(keytool -storetype PKCS12 -storepass "$store_pass")
  local key=(-keyalg EC -groupname secp256r1 -validity 30)
  # The certificate authority, and a truststore holding it (the broker checks client certificates against it).
  "${kt[@]}" -genkeypair "${key[@]}" -alias ca -dname "CN=fin test CA" -ext bc:c -keystore "$tls/ca.p12" 2>/dev/null
  "${kt[@]}" -exportcert -rfc -alias ca -keystore "$tls/ca.p12" -file "$client/ca.pem" 2>/dev/null
  "${kt[@]}" -importcert -noprompt -alias ca -file "$client/ca.pem" -keystore "$tls/truststore.p12" 2>/dev/null
  # A key pair per party, its certificate signed by the CA, stored with the chain (CA first, then the reply).
  signed_entry() {
    local name="$1" dname="$2" ext=("${@:3}")
    "${kt[@]}" -genkeypair "${key[@]}" -alias "$name" -dname "$dname" -keystore "$tls/$name.p12" 2>/dev/null
    "${kt[@]}" -certreq -alias "$name" -keystore "$tls/$name.p12" -file "$tls/$name.csr" 2>/dev/null
    "${kt[@]}" -gencert -rfc -alias ca -keystore "$tls/ca.p12" -infile "$tls/$name.csr" -outfile "$tls/$name.pem" \
      -validity 30 "${ext[@]}" 2>/dev/null
    "${kt[@]}" -importcert -noprompt -alias ca -file "$client/ca.pem" -keystore "$tls/$name.p12" 2>/dev/null
    "${kt[@]}" -importcert -alias "$name" -file "$tls/$name.pem" -keystore "$tls/$name.p12" 2>/dev/null
  }
  signed_entry broker "CN=localhost" -ext "SAN=ip:127.0.0.1,dns:localhost" -ext "EKU=serverAuth,clientAuth"
  signed_entry client "CN=fin-test-client" -ext "EKU=clientAuth"
  cp "$tls/client.pem" "$client/client-cert.pem"
  # keytool exports no private key: a JDK runs PemKey.java; a runtime without the compiler falls back on openssl.
  if ! STORE_PASS="$store_pass" java "$here/PemKey.java" "$tls/client.p12" client > "$client/client-key.pem" 2>/dev/null; then
    command -v openssl >/dev/null || { log "cannot export the client key: neither a JDK (java PemKey.java) nor openssl"; exit 1; }
    STORE_PASS="$store_pass" openssl pkcs12 -in "$tls/client.p12" -nocerts -nodes -passin env:STORE_PASS |
      sed -n '/-----BEGIN/,/-----END/p' > "$client/client-key.pem"
  fi
  chmod 600 "$client"/*.pem
  printf 'store_pass=%s\nplain_pass=%s\nscram256_pass=%s\nscram512_pass=%s\n' \
    "$store_pass" "$(random_secret)" "$(random_secret)" "$(random_secret)" > "$(dirname "$tls")/secrets.env"
  chmod 600 "$(dirname "$tls")/secrets.env"
}

random_secret() { head -c 18 /dev/urandom | base64 | tr '+/' '-_'; }

# Appends the secure listeners' settings to the broker's properties and writes client.json.
secure_properties() {
  local config="$1" tls="$2" client="$3"
  scram_users=("SCRAM-SHA-256=[name=fin-scram-256,password=$scram256_pass]"
               "SCRAM-SHA-512=[name=fin-scram-512,password=$scram512_pass]")
  cat >> "$config" <<PROPS
ssl.keystore.type=PKCS12
ssl.keystore.location=$tls/broker.p12
ssl.keystore.password=$store_pass
ssl.key.password=$store_pass
ssl.truststore.type=PKCS12
ssl.truststore.location=$tls/truststore.p12
ssl.truststore.password=$store_pass
listener.name.ssl.ssl.client.auth=required
listener.name.sasl_ssl.ssl.client.auth=none
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_fin-plain="$plain_pass";
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
PROPS
  cat > "$client/client.json" <<JSON
{
  "ssl": { "brokers": ["127.0.0.1:$ssl_port"] },
  "sasl": {
    "brokers": ["127.0.0.1:$sasl_port"],
    "users": {
      "plain": { "username": "fin-plain", "password": "$plain_pass" },
      "scram-sha-256": { "username": "fin-scram-256", "password": "$scram256_pass" },
      "scram-sha-512": { "username": "fin-scram-512", "password": "$scram512_pass" }
    }
  }
}
JSON
  chmod 600 "$client/client.json"
}
