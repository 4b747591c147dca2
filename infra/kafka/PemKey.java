// Prints the private key of a PKCS12 keystore entry as PEM (PKCS#8), for clients that read PEM files (Node's tls).
// keytool exports certificates (-exportcert -rfc) but not private keys; this needs only the JDK, no openssl.
//
//   STORE_PASS=... java infra/kafka/PemKey.java <keystore.p12> <alias> > key.pem
import java.io.FileInputStream;
import java.security.Key;
import java.security.KeyStore;
import java.util.Base64;

public class PemKey {
  public static void main(String[] args) throws Exception {
    char[] password = System.getenv("STORE_PASS").toCharArray();
    KeyStore store = KeyStore.getInstance("PKCS12");
    try (FileInputStream in = new FileInputStream(args[0])) {
      store.load(in, password);
    }
    Key key = store.getKey(args[1], password);
    String body = Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(key.getEncoded());
    System.out.print("-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n");
  }
}
